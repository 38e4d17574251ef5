/**
 * eth_subscribe and eth_unsubscribe on the native WebSocket path, against a
 * real Anvil reached over its WebSocket: newHeads, logs with address and
 * topics filters, newPendingTransactions, the standard notification shape
 * with nodegate's own subscription ids, clear errors for bad params, and
 * the legacy clients (viem, ethers) that subscribe this way.
 */
import { WebSocketProvider } from "ethers";
import { createPublicClient, keccak256, pad, parseAbiItem, toHex, webSocket } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { post, rpc } from "../support/http.js";
import { liveSubscriptions, waitForLiveSubscriptions } from "../support/live-subscriptions.js";
import { type NativeSubscriber, openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { ANVIL_KEY_0 } from "../support/probe.js";

const STORED = keccak256(toHex("Stored(address,uint256,bytes)"));
const SENDER = privateKeyToAccount(ANVIL_KEY_0).address;

let anvil: AnvilNode;
let chain: ChainDriver;
let nodegate: TestNodegate;
let probe: Probe;
let other: Probe;
const opened: NativeSubscriber[] = [];

async function subscriber(): Promise<NativeSubscriber> {
  const s = await openNativeSubscriber(nodegate.wsUrl);
  opened.push(s);
  return s;
}

beforeAll(async () => {
  anvil = await startAnvil();
  chain = chainDriver(anvil.url);
  probe = await chain.probe();
  other = await chain.probe();
  nodegate = await startNodegate({ upstreamUrl: anvil.wsUrl });
});
afterAll(async () => {
  for (const s of opened) await s.close();
  await nodegate?.close();
  await anvil?.stop();
});

describe("newHeads", () => {
  it("sends every mined block once, in order, as a header under nodegate's own subscription id", async () => {
    const s = await subscriber();
    const id = await s.subscribe("newHeads");
    expect(id).toMatch(/^0x[0-9a-f]{32}$/);
    const start = await chain.blockNumber();
    await chain.mine(5);
    const heads = await s.waitFor(id, 5);
    expect(heads.map((h) => Number(h.number))).toEqual([1, 2, 3, 4, 5].map((i) => start + i));
    expect(heads.map((h) => h.hash)).toEqual(await chain.hashes(start + 1, start + 5));
    // A header, not a block: the fields of the block without its transactions.
    const block = await chain.rpc<Record<string, unknown>>("eth_getBlockByNumber", [heads[0].number, false]);
    const { transactions: _, ...header } = block;
    expect(heads[0]).toEqual(header);
    const notification = s.messages.find((m) => (m as { method?: string }).method === "eth_subscription");
    expect(notification).toEqual({ jsonrpc: "2.0", method: "eth_subscription", params: { subscription: id, result: heads[0] } });
  });

  it("answers the subscribing message before any notification of its subscription", async () => {
    const s = await subscriber();
    s.socket.send(
      JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: ["newHeads"] },
        { jsonrpc: "2.0", id: 2, method: "eth_chainId", params: [] },
      ]),
    );
    // Blocks keep coming until two notifications arrive (run alone, the feed is still starting when the first is mined).
    for (let i = 0; i < 200 && s.messages.length < 3; i++) {
      if (i % 10 === 0) await chain.mine(1);
      await new Promise((r) => setTimeout(r, 10));
    }
    const [answer, ...rest] = s.messages as [{ id: number; result: string }[], ...{ method: string; params: { subscription: string } }[]];
    expect(answer.map((a) => a.id)).toEqual([1, 2]);
    expect(rest.every((n) => n.method === "eth_subscription" && n.params.subscription === answer[0]?.result)).toBe(true);
  });
});

describe("logs", () => {
  it("sends the logs that match the address and topics, and only those", async () => {
    const s = await subscriber();
    const byAddress = await s.subscribe("logs", { address: probe.address });
    const byTopics = await s.subscribe("logs", { address: [probe.address, other.address], topics: [STORED, null, pad(toHex(2n))] });
    const start = await chain.blockNumber();
    await probe.store(1n, "0x01");
    await other.store(2n, "0x02");
    await probe.store(2n, "0x03");
    const end = await chain.blockNumber();

    const fromProbe = await s.waitFor(byAddress, 2);
    const wantProbe = await chain.logs({ address: probe.address, fromBlock: toHex(start + 1), toBlock: toHex(end) });
    expect(fromProbe).toEqual(wantProbe);
    expect(fromProbe.every((l) => l.removed === false)).toBe(true);

    const valueTwo = await s.waitFor(byTopics, 2);
    expect(valueTwo.map((l) => [l.address, l.topics[2]])).toEqual([
      [other.address.toLowerCase(), pad(toHex(2n))],
      [probe.address.toLowerCase(), pad(toHex(2n))],
    ]);
    // Nothing else arrived for either filter once a later block is mined.
    await chain.mine(1);
    await s.request("eth_chainId");
    expect(s.results(byAddress)).toHaveLength(2);
    expect(s.results(byTopics)).toHaveLength(2);
  });

  // Found from outside: cast logs --subscribe always sends a range, which geth and Anvil take and nodegate refused.
  it("takes a range in the filter as geth does: cast's earliest..latest gets every new log, a range from a later block only its logs", async () => {
    const s = await subscriber();
    const asCast = await s.subscribe("logs", { fromBlock: "earliest", toBlock: "latest", address: probe.address, topics: [] });
    const next = await chain.blockNumber();
    const fromLater = await s.subscribe("logs", { fromBlock: toHex(next + 2), address: probe.address });
    const upTo = await s.subscribe("logs", { fromBlock: toHex(next + 1), toBlock: toHex(next + 1), address: probe.address });
    await probe.store(21n);
    await probe.store(22n);
    await probe.store(23n);
    expect(await chain.blockNumber()).toBe(next + 3);
    const every = await s.waitFor(asCast, 3);
    expect(every.map((l) => Number(l.blockNumber))).toEqual([next + 1, next + 2, next + 3]);
    expect(every).toEqual(await chain.logs({ address: probe.address, fromBlock: toHex(next + 1), toBlock: toHex(next + 3) }));
    expect((await s.waitFor(fromLater, 2)).map((l) => Number(l.blockNumber))).toEqual([next + 2, next + 3]);
    expect((await s.waitFor(upTo, 1)).map((l) => Number(l.blockNumber))).toEqual([next + 1]);
    await chain.mine(1);
    await s.request("eth_chainId");
    expect(s.results(fromLater)).toHaveLength(2);
    expect(s.results(upTo)).toHaveLength(1);
  });

  it("gives two spellings of one filter the same logs", async () => {
    const s = await subscriber();
    const a = await s.subscribe("logs", { address: probe.address, topics: [[STORED]] });
    const b = await s.subscribe("logs", { address: [probe.address.toUpperCase().replace("0X", "0x")], topics: [STORED, null, null] });
    await probe.store(9n);
    const [fromA] = await s.waitFor(a, 1);
    const [fromB] = await s.waitFor(b, 1);
    expect(fromB).toEqual(fromA);
    expect(fromA.topics[1]).toBe(pad(SENDER.toLowerCase() as `0x${string}`));
  });
});

describe("newPendingTransactions", () => {
  it("sends the hash of a transaction the node accepts", async () => {
    const s = await subscriber();
    const id = await s.subscribe("newPendingTransactions");
    const hash = await chain.rpc<string>("eth_sendTransaction", [{ from: SENDER, to: other.address, value: "0x1" }]);
    const [notified] = await s.waitFor(id, 1);
    expect(notified).toBe(hash);
  });
});

describe("eth_unsubscribe", () => {
  it("stops the notifications of that subscription only, and answers false for an unknown id", async () => {
    const s = await subscriber();
    const kept = await s.subscribe("newHeads");
    const dropped = await s.subscribe("newHeads");
    expect((await s.request("eth_unsubscribe", [dropped])).result).toBe(true);
    expect((await s.request("eth_unsubscribe", [dropped])).result).toBe(false);
    expect((await s.request("eth_unsubscribe", ["0x0123"])).result).toBe(false);
    // Ids are hex numbers, which some clients write in upper case.
    const shouted = await s.subscribe("newHeads");
    expect((await s.request("eth_unsubscribe", [`0x${shouted.slice(2).toUpperCase()}`])).result).toBe(true);
    await chain.mine(3);
    await s.waitFor(kept, 3);
    await s.request("eth_chainId");
    expect(s.results(dropped)).toEqual([]);
    expect(s.results(shouted)).toEqual([]);
  });

  it("leaves the upstream subscription when the last subscriber goes, and on disconnect", async () => {
    const hub = nodegate.gateway.subscriptions.hub(nodegate.gateway.network(undefined));
    const s = await subscriber();
    const id = await s.subscribe("logs", { address: other.address, topics: [null, null, pad(toHex(777n))] });
    const key = hub.feedKeys.find((k) => k.includes("777") || k.includes(pad(toHex(777n)).slice(2)));
    expect(key).toBeDefined();
    await s.request("eth_unsubscribe", [id]);
    expect(hub.feedKeys).not.toContain(key);
    await s.subscribe("logs", { address: other.address, topics: [null, null, pad(toHex(778n))] });
    const second = hub.feedKeys.find((k) => k.includes(pad(toHex(778n)).slice(2)));
    expect(second).toBeDefined();
    await s.close();
    for (let i = 0; i < 100 && hub.feedKeys.includes(second as string); i++) await new Promise((r) => setTimeout(r, 10));
    expect(hub.feedKeys).not.toContain(second);
  });
});

describe("bad params", () => {
  it.each([
    [["syncing"], /unsupported subscription "syncing"/],
    [[], /want \["newHeads"\]/],
    [["newHeads", {}], /newHeads takes no option/],
    [["logs", { fromBlock: "pending" }], /pending logs are not supported/],
    [["logs", { blockHash: `0x${"11".repeat(32)}` }], /takes no blockHash; use eth_getLogs/],
    [["logs", { address: "0x1234" }], /20-byte hex address/],
    [["logs", { topics: [null, "0x12"] }], /topics\[1\] must be a 32-byte hex topic/],
    [["logs", { topics: [null, null, null, null, null] }], /at most 4/],
    [["newPendingTransactions", true], /full transaction objects is not offered/],
  ])("eth_subscribe %j is -32602 saying what is wrong", async (params, message) => {
    const s = await subscriber();
    const answer = await s.request("eth_subscribe", params);
    expect(answer.error?.code).toBe(-32602);
    expect(answer.error?.message).toMatch(message);
    // The connection keeps serving.
    expect((await s.request("eth_chainId")).result).toBe("0x7a69");
  });

  it("eth_subscribe sent as a notification (no id) creates nothing", async () => {
    // Found from outside: it created a subscription the client was never told of, which held one of the key's slots.
    const s = await subscriber();
    const before = await liveSubscriptions(nodegate.gateway, "newHeads");
    s.socket.send(JSON.stringify({ jsonrpc: "2.0", method: "eth_subscribe", params: ["newHeads"] }));
    expect((await s.request("eth_chainId")).result).toBe("0x7a69");
    await chain.mine(1);
    const id = await s.subscribe("newHeads"); // a real one after it, to know when notifications would have come
    await chain.mine(1);
    await s.waitFor(id, 1);
    expect(await liveSubscriptions(nodegate.gateway, "newHeads")).toBe(before + 1);
    const notified = s.messages.filter((m) => (m as { method?: string }).method === "eth_subscription");
    expect(notified.every((m) => (m as { params: { subscription: string } }).params.subscription === id)).toBe(true);
  });

  it("over HTTP, eth_subscribe is -32601 pointing at the WebSocket address", async () => {
    const res = await post(nodegate.rpcUrl, rpc("eth_subscribe", ["newHeads"]));
    expect(res.json.error.code).toBe(-32601);
    expect(res.json.error.message).toMatch(/notifications not supported: eth_subscribe needs a WebSocket connection/);
  });
});

describe("legacy clients", () => {
  it("viem watchBlocks and watchEvent over webSocket receive blocks and logs", async () => {
    const before = { heads: await liveSubscriptions(nodegate.gateway, "newHeads"), logs: await liveSubscriptions(nodegate.gateway, "logs") };
    const client = createPublicClient({ chain: foundry, transport: webSocket(nodegate.wsUrl) });
    const blocks: bigint[] = [];
    const events: bigint[] = [];
    const stopBlocks = client.watchBlocks({ onBlock: (b) => void blocks.push(b.number) });
    const stopEvents = client.watchEvent({
      address: probe.address,
      event: parseAbiItem("event Stored(address indexed who, uint256 indexed value, bytes note)"),
      onLogs: (logs) => events.push(...logs.map((l) => l.args.value as bigint)),
    });
    try {
      // viem subscribes asynchronously: wait until both subscriptions are in place.
      await waitForLiveSubscriptions(nodegate.gateway, "newHeads", before.heads + 1);
      await waitForLiveSubscriptions(nodegate.gateway, "logs", before.logs + 1);
      const first = await probe.store(31n);
      const second = await probe.store(32n);
      for (let i = 0; i < 300 && (events.length < 2 || !blocks.includes(BigInt(second))); i++) await new Promise((r) => setTimeout(r, 10));
      expect(events).toEqual([31n, 32n]);
      expect(blocks).toEqual(expect.arrayContaining([BigInt(first), BigInt(second)]));
    } finally {
      stopBlocks();
      stopEvents();
      await client.transport.getRpcClient().then((c) => c.close());
      // Gone before the next test counts live subscriptions.
      for (let i = 0; i < 300 && (await liveSubscriptions(nodegate.gateway, "newHeads")) > before.heads; i++) await new Promise((r) => setTimeout(r, 10));
    }
  });

  it("ethers WebSocketProvider block events", async () => {
    const before = await liveSubscriptions(nodegate.gateway, "newHeads");
    const provider = new WebSocketProvider(nodegate.wsUrl);
    const seen: number[] = [];
    try {
      await provider.on("block", (n: number) => seen.push(n));
      await waitForLiveSubscriptions(nodegate.gateway, "newHeads", before + 1);
      const start = await chain.blockNumber();
      await chain.mine(3);
      for (let i = 0; i < 300 && !seen.includes(start + 3); i++) await new Promise((r) => setTimeout(r, 10));
      expect(seen.filter((n) => n > start)).toEqual([start + 1, start + 2, start + 3]);
    } finally {
      await provider.destroy();
    }
  });
});
