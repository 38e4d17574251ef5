/**
 * What the eth method table's params codecs send upstream for typed requests,
 * and how they read native params, where the spelling is a choice.
 */
import { create } from "@bufbuild/protobuf";
import { expect, it } from "vitest";
import { type FeeHistoryRequest, FeeHistoryRequestSchema } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { createMethodTable } from "../../src/methods/default-table.js";
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
