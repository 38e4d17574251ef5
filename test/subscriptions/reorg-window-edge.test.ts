/**
 * The deepest reorganization the window follows: nodegate remembers `reorgWindowBlocks` recent blocks
 * (docs/subscriptions.md), so a new branch that forks at the lowest of them (replacing the window's size less one
 * blocks) is followed from its fork point, however long the feed has run, and no subscriber is ended. Against a real
 * Anvil, with a window of 4: two such reorganizations one block apart, so that the window is checked at both of the
 * heights its bookkeeping can be at (a window that kept one block fewer at either ended the subscribers as for a
 * reorganization deeper than the window).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver } from "../support/chain-driver.js";
import { waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

const WINDOW = 4;

let anvil: AnvilNode;
let chain: ChainDriver;
let nodegate: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  nodegate = await startNodegate({ upstreamUrl: anvil.wsUrl, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, reorgWindowBlocks: WINDOW } } });
});
afterAll(async () => {
  await nodegate?.close();
  await anvil?.stop();
});

it(`a reorganization forking at the lowest of the ${WINDOW} remembered blocks is followed from its fork, not taken for a deeper one`, async () => {
  const native = await openNativeSubscriber(nodegate.wsUrl);
  try {
    const id = await native.subscribe("newHeads");
    await waitForLiveSubscriptions(nodegate.gateway, "newHeads", 1);
    await chain.mine(WINDOW + 4); // blocks sent below the window by now: a fork below it would end the subscriber
    let count = WINDOW + 4;
    await native.waitFor(id, count);
    for (let round = 0; round < 2; round++) {
      const head = await chain.blockNumber();
      const depth = WINDOW - 1; // the fork point, head - depth, is the lowest block the window holds
      const [ancestor] = await chain.hashes(head - depth, head - depth);
      await chain.rpc("anvil_reorg", [depth, []]);
      expect(await chain.blockNumber()).toBe(head);
      // The new branch, from the block above the fork point up to the head, in order.
      const branch = await chain.hashes(head - depth + 1, head);
      count += depth;
      const received = (await native.waitFor(id, count)).slice(-depth);
      expect(received.map((h) => h.hash), `round ${round}`).toEqual(branch);
      expect(received[0].parentHash).toBe(ancestor);
      expect(received[0].number).toBe(`0x${(head - depth + 1).toString(16)}`);
      // Still live: the next block comes too.
      await chain.mine(1);
      count += 1;
      const [next] = (await native.waitFor(id, count)).slice(-1);
      expect(next.parentHash).toBe(branch.at(-1));
    }
    expect(nodegate.logs.filter((l) => l.msg === "chain reorganization deeper than the window: ending the subscribers")).toEqual([]);
  } finally {
    await native.close();
  }
});
