/**
 * A one-block eth_getLogs refused with a rate limit's plain "limit exceeded" (the node serving the other calls) is
 * retried, not taken for the node refusing that block's logs: no subscriber is ended, and the log comes once the node
 * serves it (found from outside, h79: a node serving 2 calls a second, whose free calls the polls took first, ended
 * every logs subscriber, telling them to resume past the block). Against a real Anvil behind a programmable upstream.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let anvil: AnvilNode;
let chain: ChainDriver;
let probe: Probe;
let upstream: ProgrammableUpstream;
let nodegate: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  upstream = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  nodegate = await startNodegate({ upstreamUrl: upstream.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 50 } } });
});
afterAll(async () => {
  await nodegate?.close();
  await upstream?.close();
  await anvil?.stop();
});

it("a block whose logs a rate limit refuses for 13 s, while other calls are served and heads come, is sent after, and no one is ended", async () => {
  const s = await openNativeSubscriber(nodegate.wsUrl);
  try {
    const id = await s.subscribe("logs", { address: probe.address });
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
    const refused = (await chain.blockNumber()) + 1;
    let refusing = true;
    let refusals = 0;
    upstream.handler = (r) => {
      const [filter] = r.params as [{ fromBlock?: string; toBlock?: string }];
      if (refusing && r.method === "eth_getLogs" && Number(filter.fromBlock) <= refused && Number(filter.toBlock) >= refused) {
        refusals++;
        return { error: { code: -32005, message: "limit exceeded" } };
      }
      return { forward: anvil.url };
    };
    expect(await probe.store(79n)).toBe(refused);
    const mining = setInterval(() => void chain.mine(1).catch(() => {}), 500);
    await new Promise((r) => setTimeout(r, 13_000));
    clearInterval(mining);
    refusing = false;
    expect(refusals).toBeGreaterThanOrEqual(3);
    // Waited out on a backoff of at most a second here, that block asked alone: not at every head, in halved pages
    // (found from outside, h81: 30 refused calls a second at a 200 ms poll; here 326 in 13 s before, 20 after).
    expect(refusals).toBeLessThanOrEqual(60);
    const next = await probe.store(80n);
    const got = await s.waitFor(id, 2, 10_000);
    expect(got.map((l: { blockNumber: string }) => Number(l.blockNumber))).toEqual([refused, next]);
  } finally {
    upstream.handler = () => ({ forward: anvil.url });
    await s.close();
  }
}, 40_000);
