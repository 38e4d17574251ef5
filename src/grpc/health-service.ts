/**
 * grpc.health.v1.Health: Check and Watch, per service, following upstream
 * state (see HealthMonitor). Watch re-evaluates while a watcher is connected
 * (every `watchIntervalMs`, and at once when a SERVING network's node is seen
 * down) and sends a message whenever the status changes.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as Status, HealthCheckResponseSchema } from "../../gen/grpc/health/v1/health_pb.js";
import type { HealthMonitor } from "../observability/health.js";

function toStatus(state: boolean | undefined): Status {
  return state === undefined ? Status.SERVICE_UNKNOWN : state ? Status.SERVING : Status.NOT_SERVING;
}

export function registerHealth(router: ConnectRouter, monitor: HealthMonitor, watchIntervalMs = 5000): void {
  router.service(Health, {
    async check(request) {
      const state = await monitor.serviceStatus(request.service);
      if (state === undefined) throw new ConnectError(`unknown service ${request.service}`, Code.NotFound);
      return create(HealthCheckResponseSchema, { status: toStatus(state) });
    },
    async *watch(request, ctx) {
      let last: Status | undefined;
      // The watch ends when the caller leaves, or when the server drains (after saying NOT_SERVING), so it does not hold
      // shutdown up. (Listeners, not AbortSignal.any, which on Node 20 leaves an entry on the long-lived draining signal.)
      const stopped = () => ctx.signal.aborted || monitor.draining.aborted;
      while (!stopped()) {
        const status = toStatus(await monitor.serviceStatus(request.service));
        if (status !== last) {
          last = status;
          yield create(HealthCheckResponseSchema, { status });
        }
        await new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(timer);
            stopListening?.();
            ctx.signal.removeEventListener("abort", done);
            monitor.draining.removeEventListener("abort", done);
            resolve();
          };
          const timer = setTimeout(done, watchIntervalMs);
          // A client's health checking (grpc-go's uses Watch) should stop routing here at a failed call, not a tick later.
          // Only while SERVING: a node already down would wake every watcher at each failed call for nothing.
          const stopListening = status === Status.SERVING ? monitor.onOutage(done) : undefined;
          ctx.signal.addEventListener("abort", done, { once: true });
          monitor.draining.addEventListener("abort", done, { once: true });
          if (stopped()) done();
        });
      }
      if (monitor.draining.aborted && !ctx.signal.aborted && last !== Status.NOT_SERVING) {
        yield create(HealthCheckResponseSchema, { status: Status.NOT_SERVING });
      }
      // A watch that ran out its deadline says so, as other streams do (found from outside: it ended OK).
      const reason: unknown = ctx.signal.reason;
      if (reason instanceof ConnectError && reason.code === Code.DeadlineExceeded) throw reason;
    },
  });
}
