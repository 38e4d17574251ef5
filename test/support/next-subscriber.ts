/**
 * After a subscription was ended (a deep reorganization, a fresh chain), whoever subscribes next must follow the
 * node's chain as it is now: one new block, sent on top of the head the node has.
 */
import { expect } from "vitest";
import type { Gateway } from "../../src/gateway.js";
import type { ChainDriver } from "./chain-driver.js";
import { waitForLiveSubscriptions } from "./live-subscriptions.js";
import { openNativeSubscriber } from "./native-subscriber.js";

export async function expectNextSubscriberFollows(wsUrl: string, gateway: Gateway, chain: ChainDriver): Promise<void> {
  const next = await openNativeSubscriber(wsUrl);
  try {
    const id = await next.subscribe("newHeads");
    await waitForLiveSubscriptions(gateway, "newHeads", 1);
    const head = await chain.blockNumber();
    await chain.mine(1);
    const headers = await next.waitFor(id, 1);
    const last = headers[headers.length - 1];
    expect(last.number).toBe(`0x${(head + 1).toString(16)}`);
    expect(last.parentHash).toBe((await chain.hashes(head, head))[0]);
  } finally {
    await next.close();
  }
}
