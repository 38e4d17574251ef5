/**
 * Fuzzing the native front door, over HTTP and WebSocket: random and mutated
 * JSON-RPC texts (single requests, batches, params for every method, broken
 * bytes). For every input:
 * - the HTTP answer is well formed (200 with one JSON-RPC response per
 *   answerable member, in order, each with its own id; 204 when nothing is
 *   answerable), and each member gets the error the JSON-RPC rules call for
 *   or the node's answer; never an internal error;
 * - the upstream receives exactly the calls that are valid, and every call
 *   of a table method it receives has params the method's codec accepts;
 * - the same text over WebSocket gets the same answer text (or nothing), and
 *   the same upstream calls; text that is not UTF-8 closes the connection
 *   with 1007, as the WebSocket protocol says;
 * - nodegate logs no error, and answers a plain request afterwards.
 * Seeded and bounded (see support/fuzz/settings.ts); `npm run fuzz:long` runs more.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_PASS_THROUGH } from "../../src/config/config.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { createMethodTable } from "../../src/methods/default-table.js";
import { nativeBody } from "../support/fuzz/json-rpc-arbitraries.js";
import { type Prediction, predictedUpstream, predictNative } from "../support/fuzz/native-oracle.js";
import { fuzzParameters, fuzzRuns, fuzzTimeoutMs } from "../support/fuzz/settings.js";
import { post, rpc } from "../support/http.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream, type UpstreamRequest } from "../support/programmable-upstream.js";
import { openWsSession, type WsSession } from "../support/ws-session.js";

const RUNS = 250;
const KEY = "fuzz-native-key-4e11c0";
const table = createMethodTable();
const passThrough = new Set(DEFAULT_PASS_THROUGH);
const eth = table.all().filter((s) => s.family === "eth");
const starknet = table.all().filter((s) => s.family === "starknet");

let anvil: AnvilNode;
let recorder: ProgrammableUpstream;
let ng: TestNodegate;
let ws: WsSession;

beforeAll(async () => {
  anvil = await startAnvil();
  await post(anvil.url, rpc("anvil_mine", ["0x4"]));
  recorder = await startProgrammableUpstream(() => ({ forward: anvil.url }));
  ng = await startNodegate({ upstreamUrl: recorder.url, keys: [{ key: KEY, plan: "custom" }] });
  ws = await openWsSession(`${ng.url.replace("http", "ws")}/ws/v3/${KEY}`);
});
afterAll(async () => {
  await ws?.close();
  await ng?.close();
  await recorder?.close();
  await anvil?.stop();
});

const UTF8 = new TextDecoder("utf-8", { fatal: true });
function isUtf8(b: Buffer): boolean {
  try {
    UTF8.decode(b);
    return true;
  } catch {
    return false;
  }
}

interface JsonRpcResponse {
  jsonrpc: unknown;
  id: unknown;
  result?: unknown;
  error?: { code: unknown; message: unknown; data?: unknown };
}

/** One response object: the envelope's shape, and the outcome the prediction calls for. */
function checkResponse(r: JsonRpcResponse, p: { kind: "error"; code: number; id: unknown } | { kind: "upstream"; id: unknown }, where: string): void {
  expect(Object.keys(r).sort(), where).toEqual(["error" in r ? "error" : "result", "id", "jsonrpc"].sort());
  expect(r.jsonrpc, where).toBe("2.0");
  expect(r.id, where).toEqual(p.id);
  if (r.error !== undefined) {
    expect(Number.isInteger(r.error.code), where).toBe(true);
    expect(typeof r.error.message, where).toBe("string");
    expect(r.error.message, where).not.toBe("internal error");
  }
  if (p.kind === "error") expect(r.error?.code, where).toBe(p.code);
}

/** The HTTP answer against the prediction. */
function checkHttp(status: number, text: string, prediction: Prediction, where: string): void {
  if (prediction.kind === "parse-error" || prediction.kind === "empty-batch") {
    expect(status, where).toBe(200);
    expect(JSON.parse(text), where).toEqual({ jsonrpc: "2.0", id: null, error: { code: prediction.kind === "parse-error" ? -32700 : -32600, message: expect.any(String) } });
    return;
  }
  const answered = prediction.members.filter((m) => m.reply);
  if (answered.length === 0) {
    expect({ status, text }, where).toEqual({ status: 204, text: "" });
    return;
  }
  expect(status, where).toBe(200);
  const body = JSON.parse(text) as JsonRpcResponse | JsonRpcResponse[];
  if (!prediction.batch) {
    checkResponse(body as JsonRpcResponse, answered[0] as MemberLike, where);
    return;
  }
  expect(Array.isArray(body), where).toBe(true);
  expect((body as JsonRpcResponse[]).length, where).toBe(answered.length);
  (body as JsonRpcResponse[]).forEach((r, i) => checkResponse(r, answered[i] as MemberLike, `${where} [${i}]`));
}
type MemberLike = { kind: "error"; code: number; id: unknown } | { kind: "upstream"; id: unknown };

const HEAD_FETCH = /^\["(latest|pending)",false\]$/;

/** What reached the upstream: exactly the predicted calls and `also` (plus cached head-block reads for gas caps), each with valid params. */
function checkUpstream(received: UpstreamRequest[], prediction: Prediction, where: string, also: string[] = []): void {
  const expected = [...predictedUpstream(prediction), ...also];
  const methods = received.map((r) => r.method).sort();
  const extra = [...methods];
  for (const m of expected) {
    const i = extra.indexOf(m);
    expect(i, `${where}: ${m} did not reach the upstream (got ${methods.join(", ")})`).toBeGreaterThanOrEqual(0);
    extra.splice(i, 1);
  }
  const mayReadHead = expected.includes("eth_call") || expected.includes("eth_estimateGas");
  const heads = received.filter((r) => r.method === "eth_getBlockByNumber" && HEAD_FETCH.test(JSON.stringify(r.params)));
  // A call the node answered with an error of id null, right after another such error on the same connection, is
  // asked once more (the error may have been a stray copy: http-upstream.ts): pass-through params the node cannot
  // parse, as this fuzz sends, get such errors one after another.
  const withoutId = (r: UpstreamRequest) => r.body.slice(r.body.indexOf(',"method"'));
  const askedAgain = received.filter((r, i) => received.some((o, j) => j < i && withoutId(o) === withoutId(r) && /"id":null/.test(o.forwardedAnswer ?? ""))).length;
  expect(extra.length, `${where}: unexpected upstream calls ${extra.join(", ")}`).toBeLessThanOrEqual((mayReadHead ? heads.length : 0) + askedAgain);
  for (const r of received) {
    const spec = table.byJsonRpc(r.method);
    if (spec === undefined) continue;
    expect(() => spec.params.decode(r.params), `${where}: ${r.method} went upstream with params ${r.body.slice(0, 300)}`).not.toThrow();
  }
}

/** The next WebSocket message, or undefined when none comes within `ms` or the connection closes. */
async function nextWithin(session: WsSession, ms: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([session.next(), timeout, session.closed.then(() => undefined)]);
  } finally {
    clearTimeout(timer);
  }
}

let sentinel = 0;

/**
 * Sends the body as one text message, then a known request, and collects
 * what comes back until the known request is answered and, when an answer
 * is expected, one more message (answers come in the order they finish).
 */
async function overWebSocket(body: Buffer, answerExpected: boolean): Promise<{ closedWith?: number; answers: string[] }> {
  ws.socket.send(body, { binary: false });
  const id = `sentinel-${++sentinel}`;
  ws.send(JSON.stringify({ jsonrpc: "2.0", id, method: "eth_chainId" }));
  const answers: string[] = [];
  let sentinelSeen = false;
  while (!sentinelSeen || (answerExpected && answers.length === 0)) {
    const text = await nextWithin(ws, 10_000);
    if (text === undefined) {
      const code = await Promise.race([ws.closed, new Promise<number>((r) => setTimeout(() => r(-1), 200))]);
      return { closedWith: code, answers };
    }
    if (text.includes(`"id":"${id}"`)) sentinelSeen = true;
    else answers.push(text);
  }
  return { answers };
}

/** Waits (briefly) until the upstream has received `n` more requests than `before`: notifications are not waited for by an answer. */
async function upstreamReached(before: number, n: number): Promise<void> {
  for (let i = 0; i < 100 && recorder.requests.length - before < n; i++) await new Promise((r) => setTimeout(r, 10));
}

/** A body that prints as a short preview when fast-check reports it. */
function shown(body: Buffer): { body: Buffer } {
  return {
    body,
    [fc.toStringMethod]: () => `${body.length} bytes: ${JSON.stringify(body.toString("utf8").slice(0, 300))}${body.length > 300 ? "..." : ""}`,
  } as { body: Buffer };
}

it(
  "every native text gets a well-formed answer or none, on HTTP and WebSocket alike, and only valid calls reach the upstream",
  async () => {
    const bodies = nativeBody([...eth, ...eth, ...starknet], [...passThrough]).map(shown);
    let valid = 0;
    let invalid = 0;
    await fc.assert(
      fc.asyncProperty(bodies, async ({ body }) => {
        const prediction = predictNative(body, table, passThrough);
        const where = `body ${JSON.stringify(body.toString("utf8").slice(0, 400))}`;
        const upstream = predictedUpstream(prediction);
        if (upstream.length > 0) valid++;
        else invalid++;

        let before = recorder.requests.length;
        const res = await fetch(`${ng.url}/v3/${KEY}`, { method: "POST", headers: { "content-type": "application/json" }, body });
        const text = await res.text();
        checkHttp(res.status, text, prediction, where);
        const overHttp = recorder.requests.slice(before);
        checkUpstream(overHttp, prediction, `${where} (HTTP)`);

        before = recorder.requests.length;
        if (!isUtf8(body)) {
          // Not a valid text message: the WebSocket protocol closes the connection (1007) before nodegate reads it.
          const outcome = await overWebSocket(body, false);
          expect(outcome.closedWith, where).toBe(1007);
          expect(recorder.requests.length, where).toBe(before);
          ws = await openWsSession(`${ng.url.replace("http", "ws")}/ws/v3/${KEY}`);
          return;
        }
        const outcome = await overWebSocket(body, res.status !== 204);
        expect(outcome.closedWith, where).toBeUndefined();
        expect(outcome.answers.map((a) => comparable(a, prediction)), where).toEqual(res.status === 204 ? [] : [comparable(text, prediction)]);
        await upstreamReached(before, predictedUpstream(prediction).length + 1);
        checkUpstream(recorder.requests.slice(before), prediction, `${where} (WebSocket)`, ["eth_chainId"]);
      }),
      fuzzParameters(RUNS),
    );
    // The generators reach both sides of the line.
    expect(valid).toBeGreaterThan(fuzzRuns(RUNS) / 10);
    expect(invalid).toBeGreaterThan(fuzzRuns(RUNS) / 10);
    expect(ng.logs.filter((l) => (l.level as number) >= 50)).toEqual([]);
    expect((await post(`${ng.url}/v3/${KEY}`, rpc("eth_chainId"))).json.result).toBe("0x7a69");
  },
  fuzzTimeoutMs(RUNS),
);

/** Methods whose answer is new on every call (a filter id): the same text sent twice is answered differently. */
const NEW_EACH_CALL = new Set(["eth_newFilter", "eth_newBlockFilter", "eth_newPendingTransactionFilter"]);

/**
 * What nodegate adds to a node's id-null error that came right after another on the same upstream connection (it may
 * be a stray copy of that one): whether it does depends on what that connection carried before, not on the text sent
 * (found by FUZZ_RUNS=5000: the HTTP sending's answer had no note, the WebSocket sending's had it).
 */
const ID_NULL_NOTE = / \(this error came with id null right after another on the same connection: it may be that one again, and whether [^ ]+ took effect is unknown\)/g;

/** An answer as two sendings of one text must both give it. */
function comparable(answer: string, prediction: Prediction): string {
  return withoutNewFilterIds(answer.replace(ID_NULL_NOTE, ""), prediction);
}

/** An answer text with the results of filter-making calls blanked, so two sendings of one text compare equal. */
function withoutNewFilterIds(answer: string, prediction: Prediction): string {
  if (prediction.kind !== "answers") return answer;
  const ids = prediction.members.filter((m) => m.kind === "upstream" && NEW_EACH_CALL.has(m.method)).map((m) => JSON.stringify(m.id));
  if (ids.length === 0) return answer;
  const blank = (member: { id?: unknown; result?: unknown }) => (ids.includes(JSON.stringify(member.id)) && "result" in member ? { ...member, result: "(a new filter id)" } : member);
  const parsed = JSON.parse(answer) as { id?: unknown; result?: unknown } | { id?: unknown; result?: unknown }[];
  return JSON.stringify(Array.isArray(parsed) ? parsed.map(blank) : blank(parsed));
}

describe("what fuzzing found, kept as plain examples", () => {
  it("a call object with an unknown member nested 90,000 deep (under the weight limit, so parsed): -32602, not an internal error, and nothing upstream", async () => {
    const before = recorder.requests.length;
    const deep = `${"[".repeat(90_000)}${"]".repeat(90_000)}`;
    const body = `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"0x${"11".repeat(20)}","extra":${deep}},"latest"]}`;
    const res = await post(`${ng.url}/v3/${KEY}`, body);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ jsonrpc: "2.0", id: 1, error: { code: -32602, message: "invalid argument 0 (transaction.extra): nested too deeply" } });
    expect(recorder.requests.length).toBe(before);
  });

  it("a pass-through call the node cannot read: the node's own error (its reply has id null) reaches the caller", async () => {
    const deep = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
    const res = await post(`${ng.url}/v3/${KEY}`, `{"jsonrpc":"2.0","id":1,"method":"eth_protocolVersion","params":${deep}}`);
    const node = await post(anvil.url, `{"jsonrpc":"2.0","id":1,"method":"eth_protocolVersion","params":${deep}}`);
    expect(node.json.id).toBeNull();
    expect(res.json).toEqual({ jsonrpc: "2.0", id: 1, error: node.json.error });
  });
});
