/**
 * A chain and its fork (`anvil --fork-url`: one chain id, one genesis, one
 * past), each behind a nodegate, on one Redis: once they split, neither
 * serves the other's blocks nor its transactions. Found from outside: a
 * process recorded its newer final block beside the shared token over the
 * other chain's without checking it, and served the other's newest final
 * blocks (stored under that token) until the other read the token again.
 */
import { expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";

const DEV_ACCOUNTS = ["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x70997970C51812dc3A010C5aecd1B8C3c3ab90A0"];
/** One transfer, the same bytes on both chains (every field given, so each signs it alike). */
const transfer = { from: DEV_ACCOUNTS[0], to: DEV_ACCOUNTS[1], value: "0x1", gas: "0x5208", maxFeePerGas: "0x174876e800", maxPriorityFeePerGas: "0x1", nonce: "0x0" };

const call = async (url: string, method: string, params: unknown[]) => (await post(url, rpc(method, params))).json.result;
const block = async (url: string, n: number) => (await call(url, "eth_getBlockByNumber", [`0x${n.toString(16)}`, false]))?.hash as string | undefined;
const cache = (gate: TestNodegate) => gate.gateway.network(undefined).cache?.stats;

interface Forked {
  origin: AnvilNode;
  fork: AnvilNode;
  onOrigin: TestNodegate;
  onFork: TestNodegate;
}

/**
 * An Anvil at block 80 and its fork at that block, each behind a nodegate, on one Redis (finalizedMaxAgeMs 200 ms);
 * once their shared past is shared (block 10, stored by the origin's, found by the fork's), `body` runs.
 */
async function withFork(body: (chains: Forked) => Promise<void>): Promise<void> {
  let anvils: AnvilNode[] = [];
  let redis: RedisServer | undefined;
  let gates: TestNodegate[] = [];
  try {
    const origin = await startAnvil();
    anvils = [origin];
    // Anvil's finalized block is latest - 64.
    await post(origin.url, rpc("anvil_mine", ["0x50"]));
    let fork: AnvilNode;
    [fork, redis] = await Promise.all([startAnvil({ args: ["--fork-url", origin.url, "--fork-block-number", "80"] }), startRedisServer()]);
    anvils.push(fork);
    expect(await block(fork.url, 0)).toBe(await block(origin.url, 0));
    const config = { stores: { redisUrl: redis.url }, cache: { maxBytes: 16 * 1024 * 1024, coalesce: true, coalesceWindowMs: 60_000, finalizedMaxAgeMs: 200 } };
    gates = await Promise.all(anvils.map((a) => startNodegate({ upstreamUrl: a.url, keys: [{ key: "shared-forks-key-00001", plan: "custom" }], config })));
    const [onOrigin, onFork] = gates as [TestNodegate, TestNodegate];
    // Their shared past is shared: the fork's nodegate finds block 10 as the origin's stored it.
    await expect.poll(async () => [await block(onOrigin.rpcUrl, 10), cache(onOrigin)?.stored], { timeout: 10_000 }).toEqual([await block(origin.url, 10), 1]);
    await expect.poll(async () => [await block(onFork.rpcUrl, 10), cache(onFork)?.hits], { timeout: 10_000 }).toEqual([await block(origin.url, 10), 1]);
    await body({ origin, fork, onOrigin, onFork });
  } finally {
    await Promise.all(gates.map((g) => g.close()));
    await Promise.all(anvils.map((a) => a.stop()));
    await redis?.stop();
  }
}

describeRequiring(redisRequirement, "the cache shared through Redis by a chain and its fork", () => {
  it("after the split, the fork's nodegate serves the fork's final blocks and transactions, not those the origin's stored", async () => {
    await withFork(async ({ origin, fork, onOrigin, onFork }) => {
      // The split: block 81 differs (its timestamp), and one transaction (the same bytes) lands in block 81 on the
      // origin and in block 82 on the fork. Then both go on to 144, where block 80 is final on both.
      await Promise.all([origin, fork].map((a, i) => call(a.url, "evm_setNextBlockTimestamp", [1_900_000_000 + i * 7])));
      const txHash = (await call(origin.url, "eth_sendTransaction", [transfer])) as string;
      await call(fork.url, "anvil_mine", ["0x1"]);
      expect(await call(fork.url, "eth_sendTransaction", [transfer])).toBe(txHash);
      await call(origin.url, "anvil_mine", ["0x3f"]);
      await call(fork.url, "anvil_mine", ["0x3e"]);
      const txBlock = async (url: string) => (await call(url, "eth_getTransactionByHash", [txHash]))?.blockNumber as string | undefined;
      expect([await txBlock(origin.url), await txBlock(fork.url)]).toEqual(["0x51", "0x52"]);
      expect(await block(fork.url, 81)).not.toBe(await block(origin.url, 81));

      // The origin's blocks 81 and 82 become final, and its nodegate stores them and the transaction.
      await call(origin.url, "anvil_mine", ["0x2"]);
      await expect
        .poll(async () => [await block(onOrigin.rpcUrl, 81), await block(onOrigin.rpcUrl, 82), await txBlock(onOrigin.rpcUrl), cache(onOrigin)?.stored], { timeout: 10_000 })
        .toEqual([await block(origin.url, 81), await block(origin.url, 82), "0x51", 4]);
      // Then the fork's, while the origin's nodegate gets no calls (and so does not read the token again).
      await call(fork.url, "anvil_mine", ["0x2"]);
      const forkHead = onFork.gateway.network(undefined).head;
      await expect.poll(async () => (await block(onFork.rpcUrl, 10), forkHead.lastFinalized), { timeout: 10_000 }).toBe(82n);
      for (let i = 0; i < 5; i++) {
        expect(await block(onFork.rpcUrl, 81)).toBe(await block(fork.url, 81));
        expect(await block(onFork.rpcUrl, 82)).toBe(await block(fork.url, 82));
        expect(await txBlock(onFork.rpcUrl)).toBe("0x52");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // And the fork's nodegate still stores its own.
      expect(cache(onFork)?.stored).toBeGreaterThan(0);
    });
  }, 60_000);

  it("a transaction looked up by hash is served from the store only when its block is one this process vouched for: the fork's pending transaction is not the origin's mined one", async () => {
    // Its node behind the block the origin's nodegate recorded, the fork's keeps the shared token (its past is still
    // shared) but uses it only up to the block it checked: the origin stored the transaction, mined in block 81.
    await withFork(async ({ origin, fork, onOrigin, onFork }) => {
      const txHash = (await call(origin.url, "eth_sendTransaction", [transfer])) as string;
      await call(origin.url, "anvil_mine", ["0x41"]);
      const tx = async (url: string) => (await call(url, "eth_getTransactionByHash", [txHash])) as { blockNumber: string | null } | null;
      await expect.poll(async () => [(await tx(onOrigin.rpcUrl))?.blockNumber, cache(onOrigin)?.stored], { timeout: 10_000 }).toEqual(["0x51", 2]);

      await call(fork.url, "evm_setAutomine", [false]);
      expect(await call(fork.url, "eth_sendTransaction", [transfer])).toBe(txHash);
      expect((await tx(fork.url))?.blockNumber).toBeNull();
      for (let i = 0; i < 5; i++) {
        expect((await tx(onFork.rpcUrl))?.blockNumber).toBeNull();
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Its shared past is still shared.
      expect(await block(onFork.rpcUrl, 10)).toBe(await block(origin.url, 10));
      expect(cache(onFork)?.hits).toBe(2);
    });
  }, 60_000);
});
