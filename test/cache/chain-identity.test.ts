/**
 * The chain's name in a shared store's keys comes from the genesis block's hash (chain-identity.ts), read from a
 * real Anvil's answer to block 0. Found from outside (h67): a node (or a front before it) that writes a member of
 * its own after a large genesis answer had that member joined to the result by the reply reader (reply.ts), the
 * genesis read as having no hash, and the chain named by its chain id alone: two dev chains under one chain id
 * then share entries again.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { ChainIdentity } from "../../src/cache/chain-identity.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { readReply, resultText } from "../../src/upstream/reply.js";
import { post, rpc } from "../support/http.js";

let anvil: AnvilNode;
let genesisReply: string;
let genesisHash: string;

beforeAll(async () => {
  anvil = await startAnvil();
  const reply = await post(anvil.url, rpc("eth_getBlockByNumber", ["0x0", false], 1));
  genesisReply = reply.text;
  genesisHash = (reply.json.result as { hash: string }).hash;
});
afterAll(async () => {
  await anvil?.stop();
});

/** The chain's name once the node has answered `replyText` to the genesis question. */
async function nameFrom(replyText: string): Promise<string | undefined> {
  const identity = new ChainIdentity(
    () => "31337",
    async (method, paramsText) => {
      expect([method, paramsText]).toEqual(["eth_getBlockByNumber", '["0x0",false]']);
      return readReply(Buffer.from(replyText), 1);
    },
  );
  await expect.poll(() => identity.current()).toBeDefined();
  return identity.current();
}

it("names the chain by its chain id and its genesis hash's first 16 digits", async () => {
  expect(await nameFrom(genesisReply)).toBe(`31337:${genesisHash.slice(2, 18)}`);
});

it("reads the genesis hash of a large answer that a member of the node's own follows", async () => {
  // Pretty-printed past 4 KB (whitespace is JSON), then a member after the result: the reader's fast path takes both.
  const { result } = JSON.parse(genesisReply) as { result: Record<string, unknown> };
  const large = `{${Object.entries(result).map(([key, value]) => `\n${" ".repeat(200)}${JSON.stringify(key)}: ${JSON.stringify(value)}`).join(",")}\n}`;
  expect(large.length).toBeGreaterThan(4096);
  const reply = `{"jsonrpc":"2.0","id":1,"result":${large},"meta":{"servedBy":"edge-1"}}`;
  expect(JSON.parse(reply).result).toEqual(result);
  expect(() => JSON.parse(resultText(readReply(Buffer.from(reply), 1)))).toThrow(); // the member joined the result
  expect(await nameFrom(reply)).toBe(`31337:${genesisHash.slice(2, 18)}`);
});
