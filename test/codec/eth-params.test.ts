/**
 * What the eth method table's params codecs send upstream for typed requests,
 * and how they read native params, where the spelling is a choice.
 */
import { create } from "@bufbuild/protobuf";
import { expect, it } from "vitest";
import { type FeeHistoryRequest, FeeHistoryRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { createPolicies } from "../../src/methods/default-policies.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { type InvokeContext, invokeMethod } from "../../src/methods/invoke.js";
import type { ParamsCodec } from "../../src/methods/params-codec.js";

const spec = createMethodTable().byJsonRpc("eth_feeHistory");
if (spec === undefined) throw new Error("eth_feeHistory is not in the method table");
const feeHistory = spec.params as ParamsCodec<FeeHistoryRequest>;

it("eth_feeHistory: a typed caller's unset percentiles go as [] (geth requires the param); a native caller's omission stays the node's", () => {
  expect(feeHistory.encode(create(FeeHistoryRequestSchema, { blockCount: 2n }))).toBe('["0x2","latest",[]]');
  expect(feeHistory.encode(create(FeeHistoryRequestSchema, { blockCount: 2n, rewardPercentiles: [25, 75] }))).toBe('["0x2","latest",[25,75]]');
  // Left off: nothing appended, the caller's text goes as written.
  expect(feeHistory.decode(["0x2", "latest"])).toEqual({ request: expect.anything(), leftToNode: new Set([2]) });
  // Rewritten for its block (a JSON integer), still without percentiles; null in place stays null.
  expect(feeHistory.decode(["0x2", 5]).rewritten).toBe('["0x2","0x5"]');
  expect(feeHistory.decode(["0x2", 5, null]).rewritten).toBe('["0x2","0x5",null]');
  expect(feeHistory.decode(["0x2", 5, [10, 90.5]]).rewritten).toBe('["0x2","0x5",[10,90.5]]');
});

/**
 * The params text a native eth_call or eth_estimateGas goes upstream with, through invokeMethod as the native door
 * calls it, against a node whose latest and pending blocks have a gas limit of 0x100000 (so the cap is 0xa00000).
 */
async function sentUpstream(method: string, paramsText: string): Promise<string> {
  const table = createMethodTable();
  const methodSpec = table.byJsonRpc(method);
  if (methodSpec === undefined) throw new Error(`${method} is not in the method table`);
  const decoded = methodSpec.params.decode(JSON.parse(paramsText), paramsText);
  let sent: string | undefined;
  const network = {
    family: "eth",
    cache: undefined,
    head: { gasLimit: async () => 0x100000n },
    call: async (_method: string, text: string) => {
      sent = text;
      return { body: Buffer.from('"0x"'), start: 0, end: 4 };
    },
  };
  const ctx = {
    access: { checkCall: () => undefined },
    key: { plan: "core", label: "test" },
    network,
    limits: DEFAULT_LIMITS,
    policies: createPolicies(),
    signal: new AbortController().signal,
  } as unknown as InvokeContext;
  await invokeMethod(methodSpec, decoded.request, ctx, decoded.rewritten ?? paramsText, decoded.leftToNode);
  if (sent === undefined) throw new Error("nothing was sent");
  return sent;
}

it("a gas nodegate caps or bounds changes only the call object's gas member: every other byte goes as the caller wrote it", async () => {
  // Found from outside: the params were encoded again, so a state override's null was dropped, the call object's keys
  // reordered, the block re-spelled and numbers rewritten.
  const to = `"to":"0x${"ab".repeat(20)}"`;
  // Capped in place: key order, spacing, an unknown member's big number, the block's spelling and a null override stay.
  expect(await sentUpstream("eth_call", `[ { "value" :"0x0", ${to}, "gas" : "0xffffffff", "n": 123456789012345678901234567890 } , {"blockNumber" : "0x2"}, null ]`)).toBe(
    `[ { "value" :"0x0", ${to}, "gas" : "0xa00000", "n": 123456789012345678901234567890 } , {"blockNumber" : "0x2"}, null ]`,
  );
  expect(await sentUpstream("eth_estimateGas", `[{${to},"gas":"0xfffffff"}, "latest", null, {}]`)).toBe(`[{${to},"gas":"0xa00000"}, "latest", null, {}]`);
  // Added last when the caller gave none (the estimate's bound), the block left out or null in place staying so.
  expect(await sentUpstream("eth_estimateGas", `[{ ${to} , "input":"0x" }]`)).toBe(`[{ ${to} , "input":"0x","gas":"0x100000" }]`);
  expect(await sentUpstream("eth_estimateGas", `[{}, null, null]`)).toBe(`[{"gas":"0x100000"}, null, null]`);
  // A gas written twice is capped in both places: a node that reads the first of duplicate keys is capped too.
  expect(await sentUpstream("eth_call", `[{"gas":"0xfffffff",${to},"gas":"0xffffffff"},"latest"]`)).toBe(`[{"gas":"0xa00000",${to},"gas":"0xa00000"},"latest"]`);
  // A null gas is replaced where it stands, not written a second time.
  expect(await sentUpstream("eth_estimateGas", `[{"gas":null,${to}}]`)).toBe(`[{"gas":"0x100000",${to}}]`);
  // With another param rewritten (a JSON integer block), that one as hex, the others as the caller wrote them.
  expect(await sentUpstream("eth_call", `[{"gas":"0xffffffff", "n": 1e0}, 2, null]`)).toBe(`[{"gas":"0xa00000", "n": 1e0},"0x2",null]`);
  // Under the cap, nothing changes.
  expect(await sentUpstream("eth_call", `[ {"gas":"0x5208"} , "latest" ]`)).toBe(`[ {"gas":"0x5208"} , "latest" ]`);
});
