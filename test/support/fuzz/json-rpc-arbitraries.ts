/**
 * fast-check generators of JSON-RPC request texts as hostile callers write
 * them: params for every method, mostly plausible (so many are valid and go
 * upstream) and often wrong (types, bad hex, wrong lengths, huge numbers,
 * deep nesting, huge strings); envelopes with odd ids, versions and members;
 * batches; and bytes mutated from all of these (cut, spliced, invalid UTF-8).
 * Params and envelopes are built as text, so raw number spellings and deep
 * nesting that no JavaScript value can hold reach nodegate as written.
 */
import fc from "fast-check";
import type { MethodSpec } from "../../../src/methods/method-table.js";

const hexDigit = fc.constantFrom(..."0123456789abcdef");
const hexDigits = (minLength: number, maxLength: number) => fc.string({ unit: hexDigit, minLength, maxLength });
const bytesHex = (n: number) => hexDigits(n * 2, n * 2).map((h) => `0x${h}`);

export const address = bytesHex(20);
export const hash32 = bytesHex(32);
const smallQuantity = fc.nat(4).map((n) => `0x${n.toString(16)}`);
export const quantity = fc.oneof(
  { arbitrary: fc.constantFrom("0x0", "0x1", "0x2", "0x10", "0xff", "0x5208"), weight: 3 },
  { arbitrary: fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }).map((n) => `0x${n.toString(16)}`), weight: 1 },
);
const data = fc.oneof(fc.constant("0x"), hexDigits(2, 64).filter((h) => h.length % 2 === 0).map((h) => `0x${h}`));

/** Values of the right kind but wrong spelling: the codecs' edge cases. */
const badHex = fc.constantFrom(
  "0x",
  "0x01",
  "0X1",
  "1",
  "-0x1",
  "0xg",
  " 0x1",
  "0x1 ",
  "0x0g",
  `0x${"f".repeat(65)}`,
  `0x${"ab".repeat(19)}`,
  `0x${"ab".repeat(21)}`,
  `0x${"ab".repeat(31)}a`,
  "0x\u0661",
  "",
);
const blockTag = fc.constantFrom("latest", "earliest", "pending", "safe", "finalized");
const blockId = fc.oneof(
  { arbitrary: blockTag, weight: 3 },
  { arbitrary: smallQuantity, weight: 3 },
  { arbitrary: hash32, weight: 1 },
  { arbitrary: fc.record({ blockHash: hash32 }), weight: 1 },
  { arbitrary: fc.record({ blockNumber: smallQuantity }), weight: 1 },
  { arbitrary: fc.record({ blockHash: hash32, requireCanonical: fc.boolean() }), weight: 1 },
  { arbitrary: fc.nat(5), weight: 1 },
  { arbitrary: fc.nat(5).map(String), weight: 1 },
  { arbitrary: fc.constantFrom("Latest", "newest", "0xlatest"), weight: 1 },
);
const callObject = fc.record(
  {
    from: address,
    to: address,
    gas: fc.oneof(smallQuantity, quantity),
    gasPrice: quantity,
    maxFeePerGas: quantity,
    maxPriorityFeePerGas: quantity,
    value: fc.oneof(smallQuantity, quantity),
    data,
    input: data,
    nonce: smallQuantity,
    type: fc.constantFrom("0x0", "0x1", "0x2", "0x3", "0x4", "0x7f"),
    chainId: fc.constantFrom("0x7a69", "0x1"),
    accessList: fc.array(fc.record({ address, storageKeys: fc.array(hash32, { maxLength: 2 }) }), { maxLength: 2 }),
    somethingElse: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);
const topic = fc.oneof(fc.constant(null), hash32, fc.array(fc.oneof(hash32, fc.constant(null)), { maxLength: 3 }));
const logFilter = fc.record(
  {
    fromBlock: blockId,
    toBlock: blockId,
    address: fc.oneof(address, fc.array(address, { maxLength: 3 })),
    topics: fc.array(topic, { maxLength: 5 }),
    blockHash: hash32,
    blockhash: hash32,
  },
  { requiredKeys: [] },
);
const starknetBlockId = fc.oneof(
  fc.constantFrom("latest", "pending", "l1_accepted", "pre_confirmed"),
  fc.record({ block_number: fc.nat(10) }),
  fc.record({ block_hash: hexDigits(1, 63).map((h) => `0x${h}`) }),
);

/** The plausible values of a param, by the name callers see in errors. */
const PARAM_VALUES: Readonly<Record<string, fc.Arbitrary<unknown>>> = {
  address,
  position: fc.oneof(smallQuantity, hash32, quantity),
  block: blockId,
  newestBlock: blockId,
  blockHash: hash32,
  transactionHash: hash32,
  fullTransactions: fc.boolean(),
  index: smallQuantity,
  blockCount: smallQuantity,
  rewardPercentiles: fc.array(fc.oneof(fc.integer({ min: 0, max: 100 }), fc.double({ min: 0, max: 100, noNaN: true })), { maxLength: 4 }),
  storageKeys: fc.array(fc.oneof(hash32, smallQuantity), { maxLength: 3 }),
  transaction: callObject,
  filter: logFilter,
  block_id: starknetBlockId,
  response_flags: fc.array(fc.constantFrom("INCLUDE_PROOF_FACTS", "OTHER"), { maxLength: 2 }),
};

/** JSON texts no JavaScript value round-trips: big and odd number spellings, deep nesting, huge strings. */
const rawOddity = fc.oneof(
  fc.constantFrom("123456789012345678901234567890", "1e400", "-0", "0.0", "1E2", "-1", "4.2", "9007199254740993", "0.000000000000000000001"),
  // Under MAX_JSON_CONTAINERS (100,000), past which a text is refused unparsed (test/limits/json-weight.test.ts).
  fc.integer({ min: 20, max: 90_000 }).map((depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`),
  fc.integer({ min: 20, max: 20_000 }).map((depth) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`),
  fc.integer({ min: 1000, max: 400_000 }).map((n) => JSON.stringify(`0x${"ab".repeat(n / 2)}`)),
  fc.integer({ min: 1000, max: 400_000 }).map((n) => JSON.stringify("x".repeat(n))),
  fc.constantFrom('"\\ud800"', '"\\u0000"', '"0x\\u0030"', '"\\"', "{}", "[]", "null", "true", '""'),
);

/** One param as JSON text: mostly plausible for its name, sometimes wrong in kind or spelling, sometimes hostile. */
function paramText(name: string): fc.Arbitrary<string> {
  const plausible = PARAM_VALUES[name] ?? fc.jsonValue({ maxDepth: 2 });
  return fc.oneof(
    { arbitrary: plausible.map((v) => JSON.stringify(v)), weight: 12 },
    { arbitrary: badHex.map((v) => JSON.stringify(v)), weight: 2 },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? "null"), weight: 1 },
    { arbitrary: rawOddity, weight: 1 },
  );
}

/** A params text for a method: usually its params in order, sometimes too few, too many, named, or not a list at all. */
export function paramsText(spec: MethodSpec | undefined): fc.Arbitrary<string | undefined> {
  const names = spec?.params.names ?? ["a", "b"];
  const keys = spec?.rpc.input.fields.map((f) => f.name) ?? names;
  const count = fc.oneof({ arbitrary: fc.constant(names.length), weight: 8 }, { arbitrary: fc.nat(names.length + 1), weight: 2 });
  const positional = fc
    .tuple(fc.tuple(...names.map((n) => paramText(n)), paramText("extra")), count)
    .map(([texts, k]) => `[${texts.slice(0, k).join(",")}]`);
  const named = fc.tuple(...names.map((n) => paramText(n))).map((texts) => `{${texts.map((t, i) => `${JSON.stringify(keys[i])}:${t}`).join(",")}}`);
  return fc.oneof(
    { arbitrary: positional, weight: 12 },
    { arbitrary: named, weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 1 },
    { arbitrary: fc.constantFrom('"x"', "1", "null", "true", "{}", "[]"), weight: 1 },
  );
}

/**
 * A method name: one of the table's, a pass-through one, an unknown one, or
 * not a string. (Not eth_subscribe: on a WebSocket it opens a subscription,
 * which its own tests cover, so its answer differs from the HTTP one by design.)
 */
function methodText(table: readonly MethodSpec[], passThrough: readonly string[]): fc.Arbitrary<{ text: string | undefined; spec: MethodSpec | undefined }> {
  return fc.oneof(
    { arbitrary: fc.constantFrom(...table).map((spec) => ({ text: JSON.stringify(spec.jsonrpcMethod), spec })), weight: 16 },
    { arbitrary: fc.constantFrom(...passThrough).map((m) => ({ text: JSON.stringify(m), spec: undefined })), weight: 2 },
    {
      arbitrary: fc.constantFrom("eth_nope", "eth_newFilter", "eth_sendRawTransaction", "ETH_CHAINID", "", "eth_getBlockByNumber ", "__proto__", "constructor").map((m) => ({ text: JSON.stringify(m), spec: undefined })),
      weight: 2,
    },
    { arbitrary: fc.constantFrom("1", "null", "[]", "{}", "true", undefined).map((t) => ({ text: t, spec: undefined })), weight: 1 },
  );
}

const idText = fc.oneof(
  { arbitrary: fc.nat().map(String), weight: 6 },
  { arbitrary: fc.string({ maxLength: 8 }).map((s) => JSON.stringify(s)), weight: 2 },
  {
    arbitrary: fc.constantFrom("null", "1.5", "-0", "1e3", "12345678901234567890", '"\\u0041\\n"', "0.1e-2", "true", "[]", "{}", '{"id":1}'),
    weight: 2,
  },
);

/** One request object as text, members in any order, sometimes repeated. */
export function requestText(table: readonly MethodSpec[], passThrough: readonly string[]): fc.Arbitrary<string> {
  return methodText(table, passThrough).chain(({ text: method, spec }) =>
    fc
      .record({
        id: fc.option(idText, { nil: undefined, freq: 6 }),
        version: fc.oneof({ arbitrary: fc.constant('"2.0"'), weight: 12 }, { arbitrary: fc.constantFrom('"1.0"', "2", "2.0", '"2.0 "', undefined), weight: 1 }),
        params: paramsText(spec),
        extra: fc.option(fc.constantFrom('"extra":1', '"id":7', '"params":[]', '"method":"eth_chainId"'), { nil: undefined, freq: 10 }),
        order: fc.nat(5),
      })
      .map(({ id, version, params, extra, order }) => {
        const members = [
          version === undefined ? undefined : `"jsonrpc":${version}`,
          id === undefined ? undefined : `"id":${id}`,
          method === undefined ? undefined : `"method":${method}`,
          params === undefined ? undefined : `"params":${params}`,
          extra,
        ].filter((m): m is string => m !== undefined);
        const rotated = [...members.slice(order % Math.max(1, members.length)), ...members.slice(0, order % Math.max(1, members.length))];
        return `{${rotated.join(",")}}`;
      }),
  );
}

/** A batch: requests and the odd non-object member. */
export function batchText(table: readonly MethodSpec[], passThrough: readonly string[]): fc.Arbitrary<string> {
  const member = fc.oneof({ arbitrary: requestText(table, passThrough), weight: 8 }, { arbitrary: fc.constantFrom("1", "null", "[]", '"x"', "[1]", "{}"), weight: 1 });
  return fc.array(member, { minLength: 0, maxLength: 6 }).map((members) => `[${members.join(",")}]`);
}

/** Byte-level damage to a text: cut it, drop or insert a byte, or put in bytes that are not UTF-8. */
function mutated(text: fc.Arbitrary<string>): fc.Arbitrary<Buffer> {
  const damage = fc.oneof(
    fc.record({ kind: fc.constant("cut" as const), at: fc.nat() }),
    fc.record({ kind: fc.constant("drop" as const), at: fc.nat() }),
    fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), bytes: fc.constantFrom("{", "}", "[", "]", '"', ",", ":", "\\", "0x", " ", "\u0000", "\u00e9", "\ufeff") }),
    fc.record({ kind: fc.constant("invalid-utf8" as const), at: fc.nat(), bytes: fc.constantFrom(Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xed, 0xa0, 0x80])) }),
  );
  return fc.tuple(text, fc.array(damage, { minLength: 1, maxLength: 3 })).map(([t, damages]) => {
    let buf = Buffer.from(t);
    for (const d of damages) {
      const at = buf.length === 0 ? 0 : d.at % (buf.length + 1);
      if (d.kind === "cut") buf = buf.subarray(0, at);
      else if (d.kind === "drop") buf = Buffer.concat([buf.subarray(0, at), buf.subarray(at + 1)]);
      else buf = Buffer.concat([buf.subarray(0, at), typeof d.bytes === "string" ? Buffer.from(d.bytes) : d.bytes, buf.subarray(at)]);
    }
    return buf;
  });
}

/** Everything a native caller might send as one HTTP body or WebSocket message. */
export function nativeBody(table: readonly MethodSpec[], passThrough: readonly string[]): fc.Arbitrary<Buffer> {
  const request = requestText(table, passThrough);
  const batch = batchText(table, passThrough);
  return fc.oneof(
    { arbitrary: request.map((t) => Buffer.from(t)), weight: 10 },
    { arbitrary: batch.map((t) => Buffer.from(t)), weight: 4 },
    { arbitrary: mutated(fc.oneof(request, batch)), weight: 3 },
    { arbitrary: fc.json({ maxDepth: 3 }).map((t) => Buffer.from(t)), weight: 1 },
    { arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)), weight: 1 },
    { arbitrary: rawOddity.map((t) => Buffer.from(t)), weight: 1 },
  );
}
