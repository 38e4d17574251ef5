/**
 * eth_getLogs's result limit counts logs, not "logIndex" keys: a node's own
 * member inside each log that holds another "logIndex" (an L2's
 * "l2Origin":{"logIndex":...}) must not double the count. Found from outside:
 * 6,000 such logs were refused as "more than 10000 results" on both doors.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { connectClient } from "../support/grpc-clients.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const log = (i: number) =>
  `{"address":"0x${"12".repeat(20)}","topics":[],"data":"0x","blockNumber":"0x9","transactionHash":"0x${"cd".repeat(32)}","transactionIndex":"0x0","blockHash":"0x${"ef".repeat(32)}","logIndex":"0x${i.toString(16)}","removed":false,"l2Origin":{"logIndex":"0x0","chain":"0xa"}}`;

let node: ProgrammableUpstream;
let gate: TestNodegate;

beforeAll(async () => {
  node = await startProgrammableUpstream((r) => {
    const count = Number.parseInt((r.params as [{ fromBlock: string }])[0].fromBlock, 16);
    return { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":[${Array.from({ length: count }, (_, i) => log(i)).join(",")}]}` };
  });
  gate = await startNodegate({ upstreamUrl: node.url });
});

afterAll(async () => {
  await gate?.close();
  await node?.close();
});

it("6,000 logs each holding a second logIndex of the node's own are answered, on both doors", async () => {
  const native = await post(gate.rpcUrl, rpc("eth_getLogs", [{ fromBlock: "0x1770" }]));
  expect(native.json.error).toBeUndefined();
  expect(native.json.result).toHaveLength(6000);
  const typed = await connectClient(gate.url, EthService, gate.key, "grpc").getLogs({ filter: { fromBlock: { kind: { case: "number", value: 6000n } } } });
  expect(typed.logs).toHaveLength(6000);
});

it("10,001 of them are still over the limit", async () => {
  const over = await post(gate.rpcUrl, rpc("eth_getLogs", [{ fromBlock: "0x2711" }]));
  expect(over.json.error).toEqual({ code: -32005, message: "query returned more than 10000 results", data: { limit: 10_000 } });
  const exactly = await post(gate.rpcUrl, rpc("eth_getLogs", [{ fromBlock: "0x2710" }]));
  expect(exactly.json.result).toHaveLength(10_000);
});
