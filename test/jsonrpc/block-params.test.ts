/**
 * A block parameter sent as a JSON integer, as execution-apis records geth
 * reading it (eth_getBlockByNumber with [2, true]): the native door takes
 * it as that block and sends the node hex, which every node reads (Anvil
 * refuses an integer for eth_getBalance). Against a real Anvil, through a
 * recording upstream to see what was sent.
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
});
