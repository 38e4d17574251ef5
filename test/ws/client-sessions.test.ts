/**
 * Real client libraries, each running the same scripted read session (the
 * twelve seed methods plus eth_chainId and eth_blockNumber) against nodegate
 * on its HTTP and WebSocket addresses, with nodegate's upstream on HTTP and
 * on WebSocket. Every answer is checked against what was written to Anvil.
 */
import { JsonRpcProvider, WebSocketProvider as EthersWsProvider } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Address,
  createPublicClient,
  decodeAbiParameters,
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  http,
  keccak256,
  pad,
  toEventSelector,
  toHex,
  webSocket,
} from "viem";
import { Web3, WebSocketProvider as Web3WsProvider } from "web3";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { HttpUpstream } from "../../src/upstream/http-upstream.js";
import { WsUpstream } from "../../src/upstream/ws-upstream.js";
import { artifact } from "../support/contracts.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { seedProbeChain, type ProbeChain } from "../support/probe-chain.js";

/** What one session read, normalised (bigints, lower-case hex) so every library is checked the same way. */
interface SessionReads {
  chainId: bigint;
  blockNumber: bigint;
  storageSlot0: bigint;
  storageBalance: bigint;
  logs: { address: string; topics: string[]; data: string }[];
  blockByHash: { number: bigint; transactions: string[] };
  blockByNumber: { hash: string; firstTxHash: string };
  uncleByNumber: unknown;
  uncleByHash: unknown;
  txByBlockAndIndex: { hash: string; from: string; to: string };
  receipt: { status: bigint; blockHash: string; logCount: number };
  blockReceipts: { count: number; firstTxHash: string; firstStatus: bigint };
  estimateGas: bigint;
  callResult: bigint;
  /** address is undefined where the library drops it (web3.js formats the proof by its schema, which has no address). */
  proof: { address: string | undefined; codeHash: string; slot0Value: bigint; accountProofNodes: number };
}

/** The calls a session makes, with their inputs. */
interface SessionInputs {
  address: Address;
  blockNumber: bigint;
  blockHash: Hex;
  txHash: Hex;
  sender: Address;
  /** balances[sender]: keccak256(abi.encode(sender, 1)). */
  balanceSlot: Hex;
  storedCall: Hex;
  storeCall: Hex;
}

const lower = (s: string) => s.toLowerCase();
const big = (v: unknown) => BigInt(v as string | number | bigint);
const word = (hex: string) => BigInt(hex === "0x" ? 0 : hex);

type RawReceipt = { transactionHash: string; status: string };

const sessions: Record<string, (url: string, inputs: SessionInputs) => Promise<SessionReads>> = {
  async viem(url, i) {
    const transport = url.startsWith("ws") ? webSocket(url, { reconnect: false }) : http(url);
    const client = createPublicClient({ transport, cacheTime: 0 });
    try {
      const logs = await client.getLogs({ address: i.address, fromBlock: i.blockNumber, toBlock: i.blockNumber });
      const byHash = await client.getBlock({ blockHash: i.blockHash });
      const byNumber = await client.getBlock({ blockNumber: i.blockNumber, includeTransactions: true });
      const tx = await client.getTransaction({ blockNumber: i.blockNumber, index: 0 });
      const receipt = await client.getTransactionReceipt({ hash: i.txHash });
      // viem has no action for these three; its raw request is how callers reach them.
      const uncleByNumber = await client.request({ method: "eth_getUncleByBlockNumberAndIndex", params: [toHex(i.blockNumber), "0x0"] });
      const uncleByHash = await client.request({ method: "eth_getUncleByBlockHashAndIndex", params: [i.blockHash, "0x0"] });
      const blockReceipts = (await client.request({
        method: "eth_getBlockReceipts" as never,
        params: [toHex(i.blockNumber)] as never,
      })) as RawReceipt[];
      const proof = await client.getProof({ address: i.address, storageKeys: [pad("0x0")] });
      const called = await client.call({ to: i.address, data: i.storedCall });
      return {
        chainId: BigInt(await client.getChainId()),
        blockNumber: await client.getBlockNumber({ cacheTime: 0 }),
        storageSlot0: word((await client.getStorageAt({ address: i.address, slot: "0x0" })) ?? "0x"),
        storageBalance: word((await client.getStorageAt({ address: i.address, slot: i.balanceSlot })) ?? "0x"),
        logs: logs.map((l) => ({ address: lower(l.address), topics: l.topics.map(lower), data: lower(l.data) })),
        blockByHash: { number: byHash.number, transactions: byHash.transactions.map(lower) },
        blockByNumber: { hash: lower(byNumber.hash), firstTxHash: lower(byNumber.transactions[0]?.hash ?? "") },
        uncleByNumber,
        uncleByHash,
        txByBlockAndIndex: { hash: lower(tx.hash), from: lower(tx.from), to: lower(tx.to ?? "") },
        receipt: { status: receipt.status === "success" ? 1n : 0n, blockHash: lower(receipt.blockHash), logCount: receipt.logs.length },
        blockReceipts: {
          count: blockReceipts.length,
          firstTxHash: lower(blockReceipts[0]?.transactionHash ?? ""),
          firstStatus: big(blockReceipts[0]?.status),
        },
        estimateGas: await client.estimateGas({ account: i.sender, to: i.address, data: i.storeCall }),
        callResult: word(called.data ?? "0x"),
        proof: {
          address: lower(proof.address),
          codeHash: lower(proof.codeHash),
          slot0Value: proof.storageProof[0]?.value ?? -1n,
          accountProofNodes: proof.accountProof.length,
        },
      };
    } finally {
      const socketTransport = client.transport as unknown as { getRpcClient?: () => Promise<{ close(): void }> };
      if (socketTransport.getRpcClient) (await socketTransport.getRpcClient()).close();
    }
  },

  async ethers(url, i) {
    const provider = url.startsWith("ws") ? new EthersWsProvider(url) : new JsonRpcProvider(url);
    try {
      const logs = await provider.getLogs({ address: i.address, fromBlock: i.blockNumber, toBlock: i.blockNumber });
      const byHash = await provider.getBlock(i.blockHash);
      const byNumber = await provider.getBlock(i.blockNumber, true);
      const receipt = await provider.getTransactionReceipt(i.txHash);
      // ethers has no helper for these five; provider.send is its raw JSON-RPC door.
      const tx = (await provider.send("eth_getTransactionByBlockNumberAndIndex", [toHex(i.blockNumber), "0x0"])) as Record<string, string>;
      const uncleByNumber = await provider.send("eth_getUncleByBlockNumberAndIndex", [toHex(i.blockNumber), "0x0"]);
      const uncleByHash = await provider.send("eth_getUncleByBlockHashAndIndex", [i.blockHash, "0x0"]);
      const blockReceipts = (await provider.send("eth_getBlockReceipts", [toHex(i.blockNumber)])) as RawReceipt[];
      const proof = (await provider.send("eth_getProof", [i.address, [pad("0x0")], "latest"])) as {
        address: string;
        codeHash: string;
        accountProof: string[];
        storageProof: { value: string }[];
      };
      return {
        chainId: (await provider.getNetwork()).chainId,
        blockNumber: BigInt(await provider.getBlockNumber()),
        storageSlot0: word(await provider.getStorage(i.address, 0)),
        storageBalance: word(await provider.getStorage(i.address, i.balanceSlot)),
        logs: logs.map((l) => ({ address: lower(l.address), topics: l.topics.map(lower), data: lower(l.data) })),
        blockByHash: { number: BigInt(byHash?.number ?? -1), transactions: (byHash?.transactions ?? []).map(lower) },
        blockByNumber: { hash: lower(byNumber?.hash ?? ""), firstTxHash: lower(byNumber?.prefetchedTransactions[0]?.hash ?? "") },
        uncleByNumber,
        uncleByHash,
        txByBlockAndIndex: { hash: lower(tx.hash ?? ""), from: lower(tx.from ?? ""), to: lower(tx.to ?? "") },
        receipt: { status: BigInt(receipt?.status ?? -1), blockHash: lower(receipt?.blockHash ?? ""), logCount: receipt?.logs.length ?? -1 },
        blockReceipts: {
          count: blockReceipts.length,
          firstTxHash: lower(blockReceipts[0]?.transactionHash ?? ""),
          firstStatus: big(blockReceipts[0]?.status),
        },
        estimateGas: await provider.estimateGas({ from: i.sender, to: i.address, data: i.storeCall }),
        callResult: word(await provider.call({ to: i.address, data: i.storedCall })),
        proof: {
          address: lower(proof.address),
          codeHash: lower(proof.codeHash),
          slot0Value: big(proof.storageProof[0]?.value),
          accountProofNodes: proof.accountProof.length,
        },
      };
    } finally {
      await provider.destroy();
    }
  },

  async web3(url, i) {
    const wsProvider = url.startsWith("ws") ? new Web3WsProvider(url, {}, { autoReconnect: false }) : undefined;
    const web3 = new Web3(wsProvider ?? url);
    try {
      const eth = web3.eth;
      const logs = await eth.getPastLogs({ address: i.address, fromBlock: i.blockNumber, toBlock: i.blockNumber });
      const byHash = await eth.getBlock(i.blockHash, false);
      const byNumber = await eth.getBlock(i.blockNumber, true);
      const tx = await eth.getTransactionFromBlock(i.blockNumber, 0);
      const receipt = await eth.getTransactionReceipt(i.txHash);
      const uncleByNumber = await eth.getUncle(i.blockNumber, 0);
      const uncleByHash = await eth.getUncle(i.blockHash, 0);
      // web3.js has no helper for eth_getBlockReceipts; its request manager sends raw JSON-RPC.
      const blockReceipts = (await web3.requestManager.send({
        method: "eth_getBlockReceipts",
        params: [toHex(i.blockNumber)],
      })) as unknown as RawReceipt[];
      const proof = await eth.getProof(i.address, [pad("0x0")], "latest");
      const firstTx = byNumber.transactions[0];
      return {
        chainId: await eth.getChainId(),
        blockNumber: await eth.getBlockNumber(),
        storageSlot0: word(await eth.getStorageAt(i.address, 0)),
        storageBalance: word(await eth.getStorageAt(i.address, i.balanceSlot)),
        logs: logs.map((l) => {
          const log = l as { address: string; topics: string[]; data: string };
          return { address: lower(log.address), topics: log.topics.map(lower), data: lower(log.data) };
        }),
        blockByHash: { number: big(byHash.number), transactions: (byHash.transactions as string[]).map(lower) },
        blockByNumber: {
          hash: lower(byNumber.hash ?? ""),
          firstTxHash: lower(typeof firstTx === "string" ? firstTx : ((firstTx as { hash?: string } | undefined)?.hash ?? "")),
        },
        uncleByNumber: uncleByNumber ?? null,
        uncleByHash: uncleByHash ?? null,
        txByBlockAndIndex: { hash: lower(tx?.hash ?? ""), from: lower(tx?.from ?? ""), to: lower(tx?.to ?? "") },
        receipt: { status: big(receipt.status), blockHash: lower(receipt.blockHash ?? ""), logCount: receipt.logs.length },
        blockReceipts: {
          count: blockReceipts.length,
          firstTxHash: lower(blockReceipts[0]?.transactionHash ?? ""),
          firstStatus: big(blockReceipts[0]?.status),
        },
        estimateGas: await eth.estimateGas({ from: i.sender, to: i.address, data: i.storeCall }),
        callResult: word(await eth.call({ to: i.address, data: i.storedCall })),
        proof: {
          address: undefined,
          codeHash: lower(proof.codeHash),
          slot0Value: big(proof.storageProof[0]?.value),
          accountProofNodes: proof.accountProof.length,
        },
      };
    } finally {
      wsProvider?.disconnect(1000);
    }
  },
};

let anvil: AnvilNode;
let chain: ProbeChain;
let inputs: SessionInputs;
let overHttpUpstream: TestNodegate;
let overWsUpstream: TestNodegate;

async function anvilRpc(method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(anvil.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await res.json()) as { result: unknown }).result;
}

beforeAll(async () => {
  anvil = await startAnvil();
  chain = await seedProbeChain(anvil.url);
  const probe = artifact("Probe");
  inputs = {
    address: chain.address,
    blockNumber: chain.storeReceipt.blockNumber,
    blockHash: chain.storeReceipt.blockHash,
    txHash: chain.storeTx,
    sender: chain.sender,
    balanceSlot: keccak256(encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [chain.sender, 1n])),
    storedCall: encodeFunctionData({ abi: probe.abi, functionName: "stored" }),
    storeCall: encodeFunctionData({ abi: probe.abi, functionName: "store", args: [chain.storedValue + 1n, "0x"] }),
  };
  overHttpUpstream = await startNodegate({ upstreamUrl: anvil.url });
  overWsUpstream = await startNodegate({ upstreamUrl: anvil.wsUrl });
});
afterAll(async () => {
  await overHttpUpstream?.close();
  await overWsUpstream?.close();
  await anvil?.stop();
});

async function expectSessionMatchesChain(reads: SessionReads): Promise<void> {
  const i = inputs;
  expect(reads.chainId).toBe(31337n);
  expect(reads.blockNumber).toBe(big(await anvilRpc("eth_blockNumber", [])));
  expect(reads.storageSlot0).toBe(chain.storedValue);
  expect(reads.storageBalance).toBe(chain.storedValue);

  expect(reads.logs).toHaveLength(1);
  const [log] = reads.logs;
  expect(log?.address).toBe(lower(i.address));
  expect(log?.topics).toEqual([
    toEventSelector("Stored(address,uint256,bytes)"),
    lower(pad(i.sender)),
    pad(toHex(chain.storedValue)),
  ]);
  expect(decodeAbiParameters([{ type: "bytes" }], log?.data as Hex)[0]).toBe(chain.note);

  expect(reads.blockByHash).toEqual({ number: i.blockNumber, transactions: [lower(i.txHash)] });
  expect(reads.blockByNumber).toEqual({ hash: lower(i.blockHash), firstTxHash: lower(i.txHash) });
  // Anvil produces no uncles; null is the node's answer for an absent uncle.
  expect(reads.uncleByNumber).toBeNull();
  expect(reads.uncleByHash).toBeNull();
  expect(reads.txByBlockAndIndex).toEqual({ hash: lower(i.txHash), from: lower(i.sender), to: lower(i.address) });
  expect(reads.receipt).toEqual({ status: 1n, blockHash: lower(i.blockHash), logCount: 1 });
  expect(reads.blockReceipts).toEqual({ count: 1, firstTxHash: lower(i.txHash), firstStatus: 1n });

  const directEstimate = big(await anvilRpc("eth_estimateGas", [{ from: i.sender, to: i.address, data: i.storeCall }]));
  expect(reads.estimateGas).toBe(directEstimate);
  expect(reads.estimateGas).toBeGreaterThan(21_000n);
  expect(reads.callResult).toBe(chain.storedValue);
  if (reads.proof.address !== undefined) expect(reads.proof.address).toBe(lower(i.address));
  expect(reads.proof.codeHash).toBe(keccak256((await anvilRpc("eth_getCode", [i.address, "latest"])) as Hex));
  expect(reads.proof.slot0Value).toBe(chain.storedValue);
  expect(reads.proof.accountProofNodes).toBeGreaterThan(0);
}

describe("the nodegates under test", () => {
  it("use an HTTP and a WebSocket upstream respectively", () => {
    expect(overHttpUpstream.gateway.network(undefined).primary).toBeInstanceOf(HttpUpstream);
    expect(overWsUpstream.gateway.network(undefined).primary).toBeInstanceOf(WsUpstream);
  });
});

const upstreams = [
  ["HTTP upstream", () => overHttpUpstream],
  ["WebSocket upstream", () => overWsUpstream],
] as const;

for (const [upstreamName, nodegate] of upstreams) {
  describe(`client sessions through nodegate (${upstreamName})`, () => {
    for (const library of Object.keys(sessions)) {
      for (const transport of ["http", "ws"] as const) {
        it(`${library} over ${transport === "http" ? "HTTP" : "WebSocket"}`, async () => {
          const ng = nodegate();
          const url = transport === "http" ? ng.rpcUrl : ng.wsUrl;
          const run = sessions[library] as (typeof sessions)[string];
          await expectSessionMatchesChain(await run(url, inputs));
        });
      }
    }
  });
}
