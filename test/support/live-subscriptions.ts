/**
 * How many client subscriptions nodegate has live (its nodegate_subscriptions
 * gauge counts one once its feed runs): lets a test make chain events only
 * after a stream it opened in the background is really receiving.
 */
import type { Gateway } from "../../src/gateway.js";
import type { SubscriptionKind } from "../../src/subscriptions/topic.js";

export async function liveSubscriptions(gateway: Gateway, kind: SubscriptionKind): Promise<number> {
  const metric = await gateway.metrics.subscriptions.get();
  return metric.values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

/** Waits until at least `count` subscriptions of `kind` are live. */
export async function waitForLiveSubscriptions(gateway: Gateway, kind: SubscriptionKind, count: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await liveSubscriptions(gateway, kind)) < count) {
    if (Date.now() > deadline) throw new Error(`fewer than ${count} live ${kind} subscriptions after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Waits until no subscription of any kind is live (the previous test's streams are gone). */
export async function waitForNoLiveSubscriptions(gateway: Gateway, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const metric = await gateway.metrics.subscriptions.get();
    if (metric.values.every((v) => v.value === 0)) return;
    if (Date.now() > deadline) throw new Error(`subscriptions still live after ${timeoutMs} ms: ${JSON.stringify(metric.values)}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
