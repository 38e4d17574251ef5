/**
 * A polled HTTP node that fails poll after poll (down, or refusing filters)
 * is said at warn once per streak, not once per poll, and its return is
 * said too; subscribers get what comes after.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { chainDriver } from "../support/chain-driver.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate } from "../support/nodegate.js";
import { type Answer, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode;
beforeAll(async () => {
  anvil = await startAnvil();
});
afterAll(async () => {
  await anvil?.stop();
});

it("a poll failing every interval is warned about once, and its recovery said; the subscriber then gets the next head", async () => {
  let down = false;
  const node = await startProgrammableUpstream((): Answer => (down ? { raw: "unavailable", status: 503 } : { forward: anvil.url }));
  const ng = await startNodegate({ upstreamUrl: node.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 50 }, circuitBreaker: { threshold: 5, cooldownMs: 100 } } });
  const subscriber = await openNativeSubscriber(ng.wsUrl);
  try {
    const id = await subscriber.subscribe("newHeads");
    // Polls that reach the node, then (its circuit open) the probes that do, each failing.
    const asked = () => node.requests.length;
    down = true;
    const before = asked();
    while (asked() < before + 10) await new Promise((r) => setTimeout(r, 50));
    const failed = ng.logs.filter((l) => l.msg === "polling the latest block failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]?.level).toBe(40);
    down = false;
    const chain = chainDriver(anvil.url);
    await chain.mine(1);
    const [head] = await subscriber.waitFor(id, 1);
    expect(head.number).toBe(`0x${(await chain.blockNumber()).toString(16)}`);
    expect(ng.logs.filter((l) => l.msg === "polling the latest block works again")).toHaveLength(1);
    expect(ng.logs.filter((l) => l.msg === "polling the latest block failed")).toHaveLength(1);
  } finally {
    await subscriber.close();
    await ng.close();
    await node.close();
  }
});
