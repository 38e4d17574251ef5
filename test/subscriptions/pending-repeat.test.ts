/**
 * A transaction that enters the node's pending pool again (dropped by a
 * revert or a reorganization, then sent again: the same signed bytes, the
 * same hash) is announced again, as the node announces it. Found from outside
 * (h65, web3.js and ethers): nodegate remembered the last 10,000 hashes for
 * as long as the feed lived and dropped any hash among them, where the
 * remembering is meant only for two sources overlapping (a resubscription, a
 * filter beside the subscription).
 */
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver } from "../support/chain-driver.js";
import { waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { ANVIL_KEY_0 } from "../support/probe.js";
import { startWsRelay, type WsRelay } from "../support/ws-relay.js";

let anvil: AnvilNode;
let chain: ChainDriver;
let nodegate: TestNodegate;
let relay: WsRelay;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  relay = await startWsRelay(anvil.wsUrl);
  nodegate = await startNodegate({ upstreamUrl: relay.url });
});
afterAll(async () => {
  await nodegate?.close();
  await relay?.close();
  await anvil?.stop();
});

it.each([
  ["", "never" as const],
  // Found from outside (h67): within 30 s of a resubscription, a transaction first seen after it was dropped when it
  // entered the pool again, taken for the overlap of the two subscriptions.
  [" just after nodegate subscribed again", "before the first send" as const],
  // Found from outside (h69): the same, for a transaction first seen by the subscription before.
  [" when nodegate subscribed again between the two", "between the sends" as const],
])("the same signed transaction sent again after a revert is announced again%s, as the node announces it", async (_when, resubscribe) => {
  const viaNodegate = await openNativeSubscriber(nodegate.wsUrl);
  const direct = await openNativeSubscriber(anvil.wsUrl);
  try {
    const [gateId, directId] = await Promise.all([viaNodegate.subscribe("newPendingTransactions"), direct.subscribe("newPendingTransactions")]);
    await waitForLiveSubscriptions(nodegate.gateway, "newPendingTransactions", 1);
    // Taken first: the revert below takes back whatever comes between (Anvil reverted to an older state when a
    // snapshot was taken after other transactions).
    const account = privateKeyToAccount(ANVIL_KEY_0);
    const nonce = Number(BigInt(await chain.rpc<string>("eth_getTransactionCount", [account.address, "latest"])));
    const signed = await account.signTransaction({ to: account.address, value: 1n, gas: 21_000n, gasPrice: 10n ** 10n, nonce, chainId: 31337 });
    const snapshot = await chain.rpc<string>("evm_snapshot");
    const subscribeAgain = async () => {
      const subscribes = relay.count("eth_subscribe");
      const seen = viaNodegate.results(gateId).length;
      relay.sever();
      await expect.poll(() => relay.count("eth_subscribe"), { timeout: 10_000 }).toBeGreaterThan(subscribes);
      // Subscribed again once a transaction sent now reaches the subscriber (nothing is backfilled before).
      const from = (await chain.rpc<string[]>("eth_accounts"))[1];
      for (let value = 1; viaNodegate.results(gateId).length === seen && value < 50; value++) {
        await chain.rpc("eth_sendTransaction", [{ from, to: from, value: `0x${value.toString(16)}` }]);
        await viaNodegate.waitFor(gateId, seen + 1, 200).catch(() => undefined);
      }
      expect(viaNodegate.results(gateId).length).toBeGreaterThan(seen);
    };
    if (resubscribe === "before the first send") await subscribeAgain();
    const hash = await chain.rpc<string>("eth_sendRawTransaction", [signed]);
    const announced = (s: typeof direct, id: string) => s.results(id).filter((h) => h === hash).length;
    await expect.poll(() => [announced(viaNodegate, gateId), announced(direct, directId)], { timeout: 10_000 }).toEqual([1, 1]);
    if (resubscribe === "between the sends") await subscribeAgain();
    expect(await chain.rpc<boolean>("evm_revert", [snapshot])).toBe(true);
    expect(await chain.rpc<string>("eth_sendRawTransaction", [signed])).toBe(hash);
    await expect.poll(() => announced(direct, directId), { timeout: 10_000 }).toBe(2);
    await expect.poll(() => announced(viaNodegate, gateId), { timeout: 10_000 }).toBe(2);
  } finally {
    await Promise.all([viaNodegate.close(), direct.close()]);
  }
});
