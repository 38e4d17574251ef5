/**
 * The native path's JSON-RPC 2.0 envelope: ids are echoed as the caller
 * wrote them (a number beyond 2^53 keeps every digit), and malformed
 * envelopes and unknown methods get the standard codes from nodegate itself,
 * without a request to the node.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { type CountingUpstream, startCountingUpstream } from "../support/counting-upstream.js";
import { type JsonRpcReply, postJson } from "../support/json-rpc.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";

let anvil: AnvilNode;
let upstream: CountingUpstream;
let ng: TestNodegate;

beforeAll(async () => {
  anvil = await startAnvil();
  upstream = await startCountingUpstream(anvil.url);
  ng = await startNodegate({ upstreamUrl: upstream.url });
});

afterAll(async () => {
  await ng?.close();
  await upstream?.close();
  await anvil?.stop();
});

const CHAIN_ID = '"0x7a69"';

describe("ids are echoed as raw text", () => {
  for (const [title, idText] of [
    ["a number beyond 2^53 keeps every digit", "12345678901234567890"],
    ["a string stays a string", '"abc"'],
    ["a string with escapes stays as written", '"a\\"b\\u0041"'],
    ["a fraction keeps its spelling", "1.50"],
    ["a negative number", "-7"],
    ["null", "null"],
  ] as const) {
    it(title, async () => {
      const reply = await postJson(ng.rpcUrl, `{"jsonrpc":"2.0","id":${idText},"method":"eth_chainId","params":[]}`);
      expect(reply.status).toBe(200);
      expect(reply.text).toBe(`{"jsonrpc":"2.0","id":${idText},"result":${CHAIN_ID}}`);
    });
  }

  it("whitespace around the id is not part of it", async () => {
    const reply = await postJson(ng.rpcUrl, '{ "id" :  12345678901234567890 , "jsonrpc":"2.0","method":"eth_chainId"}');
    expect(reply.text).toBe(`{"jsonrpc":"2.0","id":12345678901234567890,"result":${CHAIN_ID}}`);
  });

  it("each batch member keeps its own id, in order", async () => {
    const reply = await postJson(
      ng.rpcUrl,
      '[{"jsonrpc":"2.0","id":"x","method":"eth_chainId"},{"jsonrpc":"2.0","id":98765432109876543210,"method":"eth_chainId"}]',
    );
    expect(reply.text).toBe(`[{"jsonrpc":"2.0","id":"x","result":${CHAIN_ID}},{"jsonrpc":"2.0","id":98765432109876543210,"result":${CHAIN_ID}}]`);
  });
});

describe("envelope errors come from nodegate, nothing is sent upstream", () => {
  interface EnvelopeCase {
    title: string;
    body: string;
    code: number;
    /** The id the error must carry (raw text). */
    id: string;
    message: string | RegExp;
  }

  const cases: EnvelopeCase[] = [
    { title: "unparsable text: -32700", body: '{"jsonrpc":"2.0","id":1,"method":', code: -32700, id: "null", message: "parse error" },
    { title: "not JSON at all: -32700", body: "eth_chainId please", code: -32700, id: "null", message: "parse error" },
    {
      title: "jsonrpc missing: -32600",
      body: '{"id":3,"method":"eth_chainId","params":[]}',
      code: -32600,
      id: "3",
      message: /jsonrpc must be "2.0"/,
    },
    {
      title: "jsonrpc 1.0: -32600",
      body: '{"jsonrpc":"1.0","id":"v1","method":"eth_chainId","params":[]}',
      code: -32600,
      id: '"v1"',
      message: /jsonrpc must be "2.0"/,
    },
    {
      title: "method not a string: -32600",
      body: '{"jsonrpc":"2.0","id":4,"method":7,"params":[]}',
      code: -32600,
      id: "4",
      message: /method must be a string/,
    },
    {
      title: "an unknown method: -32601",
      body: '{"jsonrpc":"2.0","id":5,"method":"eth_unknownThing","params":[]}',
      code: -32601,
      id: "5",
      message: "the method eth_unknownThing does not exist/is not available",
    },
    { title: "an empty batch: -32600", body: "[]", code: -32600, id: "null", message: /empty batch/ },
  ];

  for (const c of cases) {
    it(c.title, async () => {
      const before = upstream.count;
      const reply = await postJson(ng.rpcUrl, c.body);
      expect(reply.status).toBe(200);
      expect(reply.text).toMatch(new RegExp(`^\\{"jsonrpc":"2.0","id":${c.id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")},"error":`));
      const body = reply.json as JsonRpcReply;
      expect(body.error?.code).toBe(c.code);
      if (typeof c.message === "string") expect(body.error?.message).toBe(c.message);
      else expect(body.error?.message).toMatch(c.message);
      expect(upstream.count).toBe(before);
    });
  }

  it("a batch answers a bad member on its own and forwards the good one", async () => {
    const before = upstream.count;
    const reply = await postJson(ng.rpcUrl, '[{"jsonrpc":"2.0","id":1,"method":"eth_nope"},{"jsonrpc":"2.0","id":2,"method":"eth_chainId"},5]');
    const bodies = reply.json as JsonRpcReply[];
    expect(bodies.map((b) => [b.id, b.error?.code ?? b.result])).toEqual([
      [1, -32601],
      [2, "0x7a69"],
      [null, -32600],
    ]);
    expect(upstream.count).toBe(before + 1);
    expect(upstream.methods.at(-1)).toBe("eth_chainId");
  });

  it("a valid call is forwarded (so an unchanged count means nothing was sent)", async () => {
    const before = upstream.count;
    const reply = await postJson(ng.rpcUrl, '{"jsonrpc":"2.0","id":6,"method":"eth_chainId","params":[]}');
    expect((reply.json as JsonRpcReply).result).toBe("0x7a69");
    expect(upstream.count).toBe(before + 1);
  });
});
