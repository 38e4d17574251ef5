/**
 * Nodes that report reorganizations themselves (geth pushes the old branch's logs again with `removed: true`) must
 * not make a client see a removal twice: nodegate takes logs back on its own when the heads feed sees the new
 * branch (Anvil reports nothing), and the node's own removal of the same log, coming after, is dropped ("no gaps, no
 * duplicates", docs/subscriptions.md). Against a real Anvil, through a WebSocket relay that pushes the node's
 * removal as geth would, on nodegate's logs subscription, once the client has nodegate's.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { startWsRelay, type WsRelay } from "../support/ws-relay.js";

let anvil: AnvilNode;
let chain: ChainDriver;
let probe: Probe;
let relay: WsRelay;
let nodegate: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  relay = await startWsRelay(anvil.wsUrl);
  nodegate = await startNodegate({ upstreamUrl: relay.url });
});
afterAll(async () => {
  await nodegate?.close();
  await relay?.close();
  await anvil?.stop();
});

it("a removal the node reports after nodegate took the log back itself reaches the client once", async () => {
  const native = await openNativeSubscriber(nodegate.wsUrl);
  try {
    const id = await native.subscribe("logs", { address: probe.address });
    await waitForLiveSubscriptions(nodegate.gateway, "logs", 1);
    const block = await probe.store(1n);
    const [log] = await native.waitFor(id, 1);
    expect(Number(log.blockNumber)).toBe(block);
    for (let waited = 0; relay.pushedLogs.length === 0 && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    const pushed = relay.pushedLogs[0] as Record<string, unknown>;
    expect(pushed.blockHash).toBe(log.blockHash);

    // The log's block is replaced (Anvil says nothing of the log): nodegate takes it back itself.
    await chain.rpc("anvil_reorg", [(await chain.blockNumber()) - block + 1, []]);
    const [, removal] = await native.waitFor(id, 2);
    expect(removal).toEqual({ ...log, removed: true });

    // Then the node reports the removal too, as geth does.
    relay.pushLog({ ...pushed, removed: true });
    // A later log marks where everything pushed before it has been handled.
    const later = await probe.store(2n);
    const received = await native.waitFor(id, 3);
    expect(Number(received[2].blockNumber), "the third notification is the later log, not the removal again").toBe(later);
    expect(received[2].removed).toBe(false);
    await new Promise((r) => setTimeout(r, 100));
    expect(native.results(id).filter((l) => l.removed)).toHaveLength(1);
  } finally {
    await native.close();
  }
});
