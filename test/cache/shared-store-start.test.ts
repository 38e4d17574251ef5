/**
 * A node down as nodegate starts: the primary's chain id, which names the
 * chain in the shared cache's keys, is asked again as soon as the node
 * answers a call. Found from outside: it was asked again only 30 s later, and
 * the shared cache stayed off that long after the node came up.
 */
import { expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";
import { redisRequirement, type RedisServer, startRedisServer } from "../support/redis-server.js";
import { describeRequiring } from "../support/system-packages.js";

describeRequiring(redisRequirement, "the shared cache when the node is down at start", () => {
  it("starts storing within seconds of the node coming up", async () => {
    let anvil: AnvilNode | undefined;
    let node: ProgrammableUpstream | undefined;
    let redis: RedisServer | undefined;
    let gate: TestNodegate | undefined;
    try {
      [anvil, redis] = await Promise.all([startAnvil(), startRedisServer()]);
      await post(anvil.url, rpc("anvil_mine", ["0x50"]));
      const url = anvil.url;
      node = await startProgrammableUpstream(() => ({ forward: url }));
      await node.refuseConnections(true);
      gate = await startNodegate({ upstreamUrl: node.url, config: { stores: { redisUrl: redis.url }, cache: { maxBytes: 16 * 1024 * 1024, coalesce: true, coalesceWindowMs: 1000, finalizedMaxAgeMs: 500 } } });
      const g = gate;
      const block2 = () => post(g.rpcUrl, rpc("eth_getBlockByNumber", ["0x2", false]));
      expect((await block2()).json.error?.code).toBe(-32050);
      await node.refuseConnections(false);
      await expect.poll(async () => [(await block2()).json.result?.number, g.gateway.network(undefined).cache?.stats.stored], { timeout: 10_000, interval: 200 }).toEqual(["0x2", 1]);
    } finally {
      await gate?.close();
      await node?.close();
      await Promise.all([anvil?.stop(), redis?.stop()]);
    }
  }, 40_000);
});
