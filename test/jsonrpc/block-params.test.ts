/**
 * Params spelled as geth reads them but other nodes refuse, which the native
 * door sends in the spelling every node reads: a block parameter as a JSON
 * integer (execution-apis records geth reading eth_getBlockByNumber [2, true];
 * Anvil refuses an integer for eth_getBalance) goes as hex, and hex written
 * "0X" (Anvil refuses it for hashes, addresses and data) goes as "0x".
 * Against a real Anvil, through a recording upstream to see what was sent.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const ACCOUNT = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";

let anvil: AnvilNode;
let upstream: ProgrammableUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  await post(anvil.url, rpc("anvil_mine", ["0x3"]));
  upstream = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  ng = await startNodegate({ upstreamUrl: upstream.url });
}, 60_000);
afterAll(async () => {
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});

it("a JSON integer block is read as that block and sent as hex, by number or tag and where a hash may go too", async () => {
  for (const [method, params, hexParams] of [
    ["eth_getBlockByNumber", [2, true], ["0x2", true]],
    ["eth_getBalance", [ACCOUNT, 0], [ACCOUNT, "0x0"]],
    ["eth_getTransactionCount", [ACCOUNT, 3], [ACCOUNT, "0x3"]],
    ["eth_getBlockTransactionCountByNumber", [1], ["0x1"]],
    ["eth_feeHistory", ["0x2", 3, []], ["0x2", "0x3", []]],
  ] as const) {
    const viaNodegate = await post(ng.rpcUrl, rpc(method, [...params]));
    const direct = await post(anvil.url, rpc(method, [...hexParams]));
    expect(viaNodegate.json, method).toEqual(direct.json);
    expect(viaNodegate.json.error, method).toBeUndefined();
    expect(upstream.requests.at(-1)?.params, method).toEqual(hexParams);
  }
});

it("an integer that is not a block number is refused with -32602", async () => {
  for (const [value, why] of [
    [-1, "want a non-negative integer block number, got -1"],
    [1.5, "want a non-negative integer block number, got 1.5"],
    [2 ** 60, "cannot be read exactly"],
  ] as const) {
    const reply = await post(ng.rpcUrl, rpc("eth_getBlockByNumber", [value, false]));
    expect(reply.json.error?.code, String(value)).toBe(-32602);
    expect(reply.json.error?.message, String(value)).toContain(why);
  }
  // Past a double's range JSON.parse makes Infinity of it: the refusal does not name a number that was not sent.
  const huge = await post(ng.rpcUrl, '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":[1e400,false]}');
  expect(huge.json.error).toEqual({ code: -32602, message: "invalid argument 0 (block): a JSON number too large to read: send the block number as hex" });
});

it('hex written "0X" (hashes, addresses, data, an index) goes to the node as "0x", every other byte as sent (found from outside: Anvil answered "invalid string length")', async () => {
  const block = (await post(anvil.url, rpc("eth_getBlockByNumber", ["0x1", false]))).json.result as { hash: string };
  const upper = (h: string) => `0X${h.slice(2).toUpperCase()}`;
  for (const [method, params, lower] of [
    ["eth_getBlockByHash", [upper(block.hash), false], [block.hash, false]],
    ["eth_getBalance", [upper(ACCOUNT), "latest"], [ACCOUNT, "latest"]],
    // An EIP-1898 block object keeps its form and requireCanonical.
    ["eth_getBalance", [ACCOUNT, { blockHash: upper(block.hash), requireCanonical: true }], [ACCOUNT, { blockHash: block.hash, requireCanonical: true }]],
    ["eth_call", [{ to: upper(ACCOUNT), data: "0XABCD" }, "latest"], [{ to: ACCOUNT, data: "0xabcd" }, "latest"]],
    ["eth_getTransactionByBlockNumberAndIndex", ["0X1", "0X0"], ["0x1", "0x0"]],
    // A single address and nested topics stay as written.
    ["eth_getLogs", [{ blockHash: upper(block.hash), address: upper(ACCOUNT), topics: [[upper(block.hash)], null] }], [{ blockHash: block.hash, address: ACCOUNT, topics: [[block.hash], null] }]],
  ] as const) {
    const viaNodegate = await post(ng.rpcUrl, rpc(method, [...params]));
    const direct = await post(anvil.url, rpc(method, [...lower]));
    expect(viaNodegate.json.error, method).toBeUndefined();
    expect(viaNodegate.json, method).toEqual(direct.json);
    expect(upstream.requests.at(-1)?.params, method).toEqual(JSON.parse(JSON.stringify(params).replaceAll('"0X', '"0x')));
  }
});

it('an EIP-1898 object naming a tag ({"blockNumber": "latest"}) is read as geth and Anvil read it, and goes as written', async () => {
  for (const tag of ["latest", "pending", "earliest", "safe", "finalized"]) {
    const params = [ACCOUNT, { blockNumber: tag }];
    const viaNodegate = await post(ng.rpcUrl, rpc("eth_getBalance", params));
    const direct = await post(anvil.url, rpc("eth_getBalance", params));
    expect(viaNodegate.json.error, tag).toBeUndefined();
    expect(viaNodegate.json, tag).toEqual(direct.json);
    expect(upstream.requests.at(-1)?.params, tag).toEqual(params);
  }
  const refused = await post(ng.rpcUrl, rpc("eth_getBalance", [ACCOUNT, { blockNumber: "newest" }]));
  expect(refused.json.error?.code).toBe(-32602);
  expect(refused.json.error?.message).toMatch(/^invalid argument 1 \(block\): /);
});

it("a call nodegate rewrites (eth_estimateGas given its gas bound) keeps each member once: a list sent as null stays null, not [] and null", async () => {
  // Found from outside: an empty list field was written as [] and then its null again, a duplicate key that
  // serde-based nodes may refuse.
  const tx = { to: ACCOUNT, accessList: [{ address: ACCOUNT, storageKeys: null }] };
  await post(ng.rpcUrl, rpc("eth_estimateGas", [tx]));
  const sent = upstream.requests.filter((r) => r.method === "eth_estimateGas").at(-1);
  expect(sent?.body.match(/"storageKeys"/g)).toHaveLength(1);
  expect((sent?.params as [{ gas?: string; accessList: unknown }])[0].accessList).toEqual(tx.accessList);
  expect((sent?.params as [{ gas?: string }])[0].gas).toMatch(/^0x[1-9a-f]/);
});

it("null for a required list (eth_feeHistory's rewardPercentiles, as viem's getFeeHistory sends it) goes to the node as written, as geth reads it", async () => {
  // Found from outside: refused -32602 "want an array", where geth-based providers answer without rewards.
  const handler = upstream.handler;
  upstream.handler = (r) => (r.method === "eth_feeHistory" ? { result: { oldestBlock: "0x2", baseFeePerGas: ["0x1", "0x1", "0x1"], gasUsedRatio: [0, 0] } } : { forward: anvil.url });
  try {
    const answer = await post(ng.rpcUrl, rpc("eth_feeHistory", ["0x2", "latest", null]));
    expect(answer.json.result?.oldestBlock).toBe("0x2");
    expect(upstream.requests.at(-1)?.params).toEqual(["0x2", "latest", null]);
  } finally {
    upstream.handler = handler;
  }
});

it("eth_feeHistory without rewardPercentiles is the node's to judge: sent as written, and Anvil's answer comes back as it gave it", async () => {
  // Found from outside: refused -32602 "missing value for required argument 2", which Anvil, reth and Nethermind answer
  // (geth refuses it with that same text).
  for (const params of [
    ["0x2", "latest"],
    ["0x2", 2],
  ]) {
    const viaNodegate = await post(ng.rpcUrl, rpc("eth_feeHistory", params));
    const direct = await post(anvil.url, rpc("eth_feeHistory", ["0x2", "0x2"].slice(0, 1).concat(params[1] === 2 ? ["0x2"] : ["latest"])));
    expect(viaNodegate.json.error, JSON.stringify(params)).toBeUndefined();
    expect(viaNodegate.json, JSON.stringify(params)).toEqual(direct.json);
    // A block nodegate rewrites (an integer) does not add the percentiles either.
    expect(upstream.requests.at(-1)?.params).toEqual(params[1] === 2 ? ["0x2", "0x2"] : params);
  }
});

it("a param nodegate rewrites leaves the others as the caller wrote them: eth_getProof's storage keys, which it echoes, stay as sent", async () => {
  // Found from outside: a null block (sent as "latest") re-encoded every param, so the key "0x0" went as 32 bytes
  // and "2" as "0x2": a node that echoes keys as sent (geth) would have answered with other keys.
  // (Anvil refuses a proof's key shorter than 32 bytes, so these differ in their case.)
  const keys = [`0x${"0".repeat(62)}AB`, `0X${"0".repeat(62)}cd`];
  const sentKeys = [keys[0], `0x${"0".repeat(62)}cd`];
  const viaNodegate = await post(ng.rpcUrl, rpc("eth_getProof", [ACCOUNT, keys, null]));
  expect(viaNodegate.json.error).toBeUndefined();
  expect(upstream.requests.at(-1)?.params).toEqual([ACCOUNT, sentKeys, "latest"]);
  const direct = await post(anvil.url, rpc("eth_getProof", [ACCOUNT, sentKeys, "latest"]));
  expect(viaNodegate.json).toEqual(direct.json);
});

it("a param nodegate rewrites leaves the others in the caller's own text: numbers, key order and spacing as written", async () => {
  // Found from outside: the others went as JSON.stringify made them of the parsed value, so 1e0 became 1, a number
  // past 2^53 lost digits, and the node answered differently than with the block written as hex.
  const call = `{ "value" :"0x0", "to":"${ACCOUNT}","gas": "0x5208", "extra": 9007199254740993, "n": 1e0 }`;
  const paramsText = (block: string) => `[${call} , ${block}]`;
  const viaNodegate = await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${paramsText("2")}}`);
  const sent = upstream.requests.at(-1)?.body ?? "";
  expect(sent.slice(sent.indexOf('"params":') + 9, sent.lastIndexOf("]") + 1)).toBe(`[${call},"0x2"]`);
  // The node is asked what it would be asked with the block in hex, and answers the same.
  const direct = await post(anvil.url, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${paramsText('"0x2"')}}`);
  // An answer, not two alike errors (Anvil refuses an unknown member past u128).
  expect(direct.json.result).toBe("0x");
  expect(viaNodegate.json).toEqual(direct.json);
  // Nulls in place (a state override's, block overrides') stay nulls.
  await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"${ACCOUNT}"},2,null,null]}`);
  expect(upstream.requests.at(-1)?.params).toEqual([{ to: ACCOUNT }, "0x2", null, null]);
});

it("a storage slot without 0x is read as geth and Anvil read it, and goes as written", async () => {
  // Found from outside: refused "invalid hex in storage slot" (now "storage key", as geth says it), which both nodes answer.
  const viaNodegate = await post(ng.rpcUrl, rpc("eth_getStorageAt", [ACCOUNT, "2", "latest"]));
  const direct = await post(anvil.url, rpc("eth_getStorageAt", [ACCOUNT, "2", "latest"]));
  expect(viaNodegate.json.error).toBeUndefined();
  expect(viaNodegate.json).toEqual(direct.json);
  expect(upstream.requests.at(-1)?.params).toEqual([ACCOUNT, "2", "latest"]);
});

it("a call whose gas nodegate caps goes in the caller's own text, only its gas changed: a null override, key order, the block's spelling and big numbers stay", async () => {
  // Found from outside: the capped call was encoded again from the typed request, so its state override's null was
  // dropped, the call object's keys reordered and the EIP-1898 block object re-spelled as a bare number.
  const latest = (await post(anvil.url, rpc("eth_getBlockByNumber", ["latest", false]))).json.result as { gasLimit: string };
  const cap = `0x${(BigInt(latest.gasLimit) * 10n).toString(16)}`;
  const call = (gas: string) => `{ "value" :"0x0", "to":"${ACCOUNT}","gas": "${gas}", "extra": 9007199254740993, "n": 1e0 }`;
  const paramsText = (gas: string) => `[${call(gas)} , { "blockNumber" : "0x2" } , null ]`;
  const viaNodegate = await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${paramsText(`0x${"f".repeat(15)}`)}}`);
  expect(viaNodegate.json.error).toBeUndefined();
  const sent = upstream.requests.filter((r) => r.method === "eth_call").at(-1)?.body ?? "";
  expect(sent.slice(sent.indexOf('"params":') + 9, sent.lastIndexOf("]") + 1)).toBe(paramsText(cap));
  // The node answers as it does the caller's call with the capped gas written in.
  const direct = await post(anvil.url, `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":${paramsText(cap)}}`);
  expect(viaNodegate.json).toEqual(direct.json);

  // eth_estimateGas's bound is added last in the caller's call object; the block left to the node stays null.
  const estimate = `[{ "from":"${ACCOUNT}", "to":"${ACCOUNT}", "n": 1e0 } , null , null ]`;
  const estimated = await post(ng.rpcUrl, `{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":${estimate}}`);
  expect(estimated.json.error).toBeUndefined();
  const sentEstimate = upstream.requests.filter((r) => r.method === "eth_estimateGas").at(-1)?.body ?? "";
  const bound = (JSON.parse(sentEstimate) as { params: [{ gas: string }] }).params[0].gas;
  expect(bound).toMatch(/^0x[1-9a-f][0-9a-f]*$/);
  expect(sentEstimate.slice(sentEstimate.indexOf('"params":') + 9, sentEstimate.lastIndexOf("]") + 1)).toBe(estimate.replace(' "n": 1e0 }', ` "n": 1e0,"gas":"${bound}" }`));
});
