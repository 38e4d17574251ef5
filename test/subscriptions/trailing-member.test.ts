/**
 * A node that writes a member of its own after a large result
 * (`..."result":[...],"served_by":[...]}`): nodegate forwards such a reply to
 * native callers as written, taking the result to the reply's closing brace
 * unscanned (reply.ts), and its own readers read the reply member by member
 * when that text does not parse. Here, the pending-transaction filter polled
 * over HTTP; heads and the gas limit are in test/e2e/non-canonical-hex.test.ts.
 * Found on review: every poll failed, and no hash reached a subscriber.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { openNativeSubscriber } from "../support/native-subscriber.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const HASHES = Array.from({ length: 100 }, (_, i) => `0x${(i + 1).toString(16).padStart(64, "e")}`);
const head = (n: number) => ({ number: `0x${n.toString(16)}`, hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: `0x${(1_700_000_000 + n).toString(16)}` });

let upstream: ProgrammableUpstream;
let nodegate: TestNodegate;
let polls = 0;

beforeAll(async () => {
  upstream = await startProgrammableUpstream((r) => {
    if (r.method === "eth_chainId") return { result: "0x7a69" };
    if (r.method === "eth_blockNumber") return { result: "0x10" };
    if (r.method === "eth_getBlockByNumber") return { result: head(16) };
    if (r.method === "eth_newPendingTransactionFilter") return { result: "0x1" };
    if (r.method === "eth_getFilterChanges") {
      // The first poll makes the filter; the hashes come with the second, in a reply over 4 KB with a member after it.
      const changes = ++polls === 2 ? JSON.stringify(HASHES) : "[]";
      return { raw: `{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":${changes},"served_by":["edge-1"]}` };
    }
    return { error: { code: -32601, message: "the method does not exist/is not available" } };
  });
  nodegate = await startNodegate({ upstreamUrl: upstream.url, config: { subscriptions: { ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 100 } } });
});
afterAll(async () => {
  await nodegate?.close();
  await upstream?.close();
});

it("pending transactions polled from a filter whose large answer a member of the node's own follows reach subscribers", async () => {
  const s = await openNativeSubscriber(nodegate.wsUrl);
  try {
    const id = await s.subscribe("newPendingTransactions");
    expect(await s.waitFor(id, HASHES.length, 10_000)).toEqual(HASHES);
  } finally {
    await s.close();
  }
});
