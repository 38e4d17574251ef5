/**
 * A typed logs resume from a block below where the feed's window starts reads those blocks' headers (to follow a
 * reorganization among them); a read the node refuses in passing (a 429, a dropped reply) is tried again, as the
 * history's logs are, rather than ending the stream UNAVAILABLE with nothing sent (found from outside, h81: under a
 * node refusing 15% of calls, 12 of 12 logs resumes from block 1 ended "upstream unavailable: HTTP 429" within 170 ms).
 */
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService, SubscribeLogsRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type ChainDriver, chainDriver, type Probe } from "../support/chain-driver.js";
import { grpcJsStreamClient, openGrpcJsStream } from "../support/grpc-streams.js";
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
  for (let v = 1n; v <= 10n; v++) await probe.store(v);
  upstream = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  nodegate = await startNodegate({ upstreamUrl: upstream.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 200 } } });
});
afterAll(async () => {
  await nodegate?.close();
  await upstream?.close();
  await anvil?.stop();
});

for (const refusal of ["429", "dropped reply"] as const) {
  it(`a logs resume whose header reads below the window meet a passing refusal (${refusal}) gets its whole history`, async () => {
    const head = await chain.blockNumber();
    const want = (await chain.logs({ address: probe.address, fromBlock: "0x1", toBlock: "latest" })).map((l) => `${Number(l.blockNumber)}/${l.blockHash}`);
    expect(want).toHaveLength(10);
    // Each numbered header below the head is refused once.
    const refused = new Set<string>();
    upstream.handler = (r) => {
      const [block] = (r.params ?? []) as unknown[];
      if (r.method === "eth_getBlockByNumber" && typeof block === "string" && block.startsWith("0x") && Number(block) < head && !refused.has(block)) {
        refused.add(block);
        return refusal === "429" ? { raw: "Too Many Requests", status: 429 } : { destroy: true };
      }
      return { forward: anvil.url };
    };
    const client = grpcJsStreamClient(nodegate.address);
    try {
      const filter = create(LogFilterSchema, { address: [Buffer.from(probe.address.slice(2), "hex")] });
      const stream = openGrpcJsStream(client, EthService.method.subscribeLogs, create(SubscribeLogsRequestSchema, { filter, fromBlock: 1n }), { "x-api-key": nodegate.key });
      const got = await stream.waitFor(10);
      expect(got.map((m) => `${Number(m.log?.blockNumber)}/0x${Buffer.from(m.log?.blockHash ?? []).toString("hex")}`)).toEqual(want);
      expect(refused.size).toBeGreaterThan(0);
      stream.cancel();
    } finally {
      upstream.handler = () => ({ forward: anvil.url });
      client.close();
    }
  }, 30_000);
}
