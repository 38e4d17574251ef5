/**
 * Several nodegate processes on one port (node:cluster), so a machine's cores
 * all serve. The primary owns the listening socket and hands each new
 * connection to a worker in turn; every worker is a whole nodegate with its
 * own upstream pools, answer cache, in-flight coalescing and rate-limit
 * counters (a key's limits apply per worker unless a shared RateLimitStore
 * is configured). A worker that dies is replaced.
 */
import cluster, { type Worker } from "node:cluster";
import type { AddressInfo } from "node:net";
import { serveClusterMetrics } from "./observability/cluster-metrics.js";

export interface Workers {
  /** Where the workers listen (the same port for all). */
  address: AddressInfo;
  pids(): number[];
  /**
   * Stops every worker: SIGTERM (each drains its in-flight requests), then
   * SIGKILL for one still running after `graceMs`. Resolves true when every
   * worker exited on its own.
   */
  stop(graceMs: number): Promise<boolean>;
}

/** How long after a worker's death the next is forked, at first. */
const FIRST_RESTART_DELAY_MS = 500;
/** The longest wait between forks in a crash loop. */
const MAX_RESTART_DELAY_MS = 32_000;
/** A worker that dies sooner than this after its fork counts as a crash at start. */
const EARLY_DEATH_MS = 10_000;

/** A worker's request for the configuration file's text, and the primary's answer (over the cluster's IPC channel). */
const CONFIG_TEXT_ASKED = "nodegate:config-text?";
const CONFIG_TEXT = "nodegate:config-text";

/**
 * In a worker: the configuration file's text as the primary read and checked
 * it (see forkWorkers' `configText`). Over the IPC channel, not the
 * environment: Linux refuses an environment string over 128 KiB, and a file
 * of a few thousand keys is larger (found from outside: `spawn E2BIG`).
 */
export function configTextFromPrimary(): Promise<string> {
  return new Promise((resolve) => {
    const onMessage = (message: unknown): void => {
      const m = message as { type?: unknown; text?: unknown } | null;
      if (m?.type !== CONFIG_TEXT || typeof m.text !== "string") return;
      process.off("message", onMessage);
      resolve(m.text);
    };
    process.on("message", onMessage);
    process.send?.({ type: CONFIG_TEXT_ASKED });
  });
}

/** ForkOptions.graceMs when none is given: the default drainMs (10 s) and the 3 s src/main.ts allows past it. */
const DEFAULT_GRACE_MS = 13_000;

/**
 * How forkWorkers ends the start early. `graceMs`: how long a worker may take to exit after SIGTERM before it is
 * killed, as in Workers.stop. `signal`: aborted (a stop signal while the workers start), the start is given up.
 */
export interface ForkOptions {
  graceMs: number;
  signal?: AbortSignal;
}

/**
 * forkWorkers' rejection: a worker exited before every worker listened, or the start was aborted. It comes once every
 * worker forked has exited (found from outside: the primary exited while a worker that had started listening still
 * drained its calls, left to itself; under a supervisor that ends the group when its main process ends, its calls were
 * cut). `clean`: every worker exited on its own, none had to be killed after the grace.
 */
export class WorkersNotStarted extends Error {
  readonly aborted: boolean;
  readonly clean: boolean;
  constructor(message: string, aborted: boolean, clean: boolean) {
    super(message);
    this.name = "WorkersNotStarted";
    this.aborted = aborted;
    this.clean = clean;
  }
}

/**
 * In the primary: forks `count` workers with `env` added, and resolves once all listen. `configText`: the
 * configuration file's text, handed to each worker that asks (configTextFromPrimary), replacements included. A worker
 * that exits before all listen, or `options.signal` aborted before they do, stops the others (SIGTERM, then SIGKILL
 * after `options.graceMs`) and rejects with WorkersNotStarted once none is left.
 */
export function forkWorkers(count: number, env: Record<string, string> = {}, configText?: string, options: ForkOptions = { graceMs: DEFAULT_GRACE_MS }): Promise<Workers> {
  if (!cluster.isPrimary) throw new Error("forkWorkers runs in the cluster primary");
  serveClusterMetrics();
  let stopping = false;
  let started = false;
  const live = new Set<Worker>();
  const forkedAt = new WeakMap<Worker, number>();
  let restartDelayMs = FIRST_RESTART_DELAY_MS;
  const fork = (): Worker => {
    const worker = cluster.fork(env);
    live.add(worker);
    forkedAt.set(worker, performance.now());
    // A message to a worker that has just died fails on its closed channel; unheard, that error would end the
    // primary, and every worker with it. The worker's exit is reported below.
    worker.on("error", (err: Error) => {
      process.stderr.write(`nodegate: worker ${worker.process.pid}: ${err.message}\n`);
    });
    worker.on("message", (message: unknown) => {
      if ((message as { type?: unknown } | null)?.type === CONFIG_TEXT_ASKED && configText !== undefined) worker.send({ type: CONFIG_TEXT, text: configText });
    });
    worker.on("exit", (code, signal) => {
      live.delete(worker);
      // Before all listen, a worker that exits fails the start instead (see below).
      if (stopping || !started) return;
      // A worker that dies soon after it started will likely die again (a crash at start): each such death doubles
      // the wait before the next fork, up to half a minute, so a crash loop does not keep a core busy forking.
      restartDelayMs = performance.now() - forkedAt.get(worker)! < EARLY_DEATH_MS ? Math.min(restartDelayMs * 2, MAX_RESTART_DELAY_MS) : FIRST_RESTART_DELAY_MS;
      // Said where deployers look: a worker crash was otherwise silent.
      process.stderr.write(`nodegate: worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); starting another in ${restartDelayMs / 1000} s\n`);
      // Not unref'd: when every worker is gone, this timer is all that keeps the primary alive until the next worker
      // starts (the port itself closes with the last worker, and opens again with the next).
      setTimeout(() => {
        if (!stopping) fork();
      }, restartDelayMs);
    });
    return worker;
  };
  /** SIGTERM to every worker (each drains), SIGKILL to one still running after `graceMs`; true when none was killed. */
  const stopAll = (graceMs: number): Promise<boolean> => {
    stopping = true;
    return Promise.all(
      [...live].map(
        (w) =>
          new Promise<boolean>((done) => {
            if (w.isDead()) return done(true);
            let killed = false;
            const timer = setTimeout(() => {
              killed = true;
              w.process.kill("SIGKILL");
            }, graceMs);
            timer.unref();
            w.once("exit", () => {
              clearTimeout(timer);
              done(!killed);
            });
            w.process.kill("SIGTERM");
          }),
      ),
    ).then((clean) => clean.every(Boolean));
  };
  return new Promise((resolve, reject) => {
    let listening = 0;
    let address: AddressInfo | undefined;
    let failing = false;
    // Every worker forked so far is stopped and waited for, whether it listens already (it drains what it was handed)
    // or is still starting; only then does the start fail, so the primary never exits ahead of its workers.
    const giveUp = (message: string, aborted: boolean) => {
      if (started || failing) return;
      failing = true;
      cluster.off("listening", onListening);
      options.signal?.removeEventListener("abort", onAbort);
      void stopAll(options.graceMs).then((clean) => reject(new WorkersNotStarted(message, aborted, clean)));
    };
    const onAbort = () => giveUp("stopped while starting", true);
    const onListening = (_worker: Worker, at: { address: string; port: number }) => {
      if (failing) return;
      address ??= { address: at.address, port: at.port, family: at.address.includes(":") ? "IPv6" : "IPv4" };
      if (++listening === count) {
        started = true;
        cluster.off("listening", onListening);
        options.signal?.removeEventListener("abort", onAbort);
        resolve({
          address,
          pids: () => [...live].map((w) => w.process.pid).filter((p): p is number => p !== undefined),
          stop: stopAll,
        });
      }
    };
    cluster.on("listening", onListening);
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    for (let i = 0; i < count; i++) {
      // A worker that cannot start (bad config, a port in use) would fail again: give up.
      fork().once("exit", (code, signal) => giveUp(`a worker exited ${signal === null ? `with code ${code}` : `on ${signal}`} before listening`, false));
    }
  });
}
