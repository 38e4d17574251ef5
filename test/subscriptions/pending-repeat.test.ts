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

let anvil: AnvilNode;
let chain: ChainDriver;
let nodegate: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  nodegate = await startNodegate({ upstreamUrl: anvil.wsUrl });
});
afterAll(async () => {
  await nodegate?.close();
  await anvil?.stop();
});

it("the same signed transaction sent again after a revert is announced again, as the node announces it", async () => {
  const viaNodegate = await openNativeSubscriber(nodegate.wsUrl);
  const direct = await openNativeSubscriber(anvil.wsUrl);
  try {
    const [gateId, directId] = await Promise.all([viaNodegate.subscribe("newPendingTransactions"), direct.subscribe("newPendingTransactions")]);
    await waitForLiveSubscriptions(nodegate.gateway, "newPendingTransactions", 1);
    const account = privateKeyToAccount(ANVIL_KEY_0);
    const nonce = Number(BigInt(await chain.rpc<string>("eth_getTransactionCount", [account.address, "latest"])));
    const signed = await account.signTransaction({ to: account.address, value: 1n, gas: 21_000n, gasPrice: 10n ** 10n, nonce, chainId: 31337 });
    const snapshot = await chain.rpc<string>("evm_snapshot");
    const hash = await chain.rpc<string>("eth_sendRawTransaction", [signed]);
    await Promise.all([viaNodegate.waitFor(gateId, 1), direct.waitFor(directId, 1)]);
    expect(await chain.rpc<boolean>("evm_revert", [snapshot])).toBe(true);
    expect(await chain.rpc<string>("eth_sendRawTransaction", [signed])).toBe(hash);
    expect(await direct.waitFor(directId, 2)).toEqual([hash, hash]);
    expect(await viaNodegate.waitFor(gateId, 2)).toEqual([hash, hash]);
  } finally {
    await Promise.all([viaNodegate.close(), direct.close()]);
  }
});
