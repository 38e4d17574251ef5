/**
 * When an answer may be cached: only once it can no longer change. Either the
 * request names a block by number and that block is final, or the answer
 * names its block (a transaction, a receipt, a block looked up by hash) and
 * that block is final. Tags (latest, pending, safe, finalized, earliest) are
 * never cached.
 */
import type { Message } from "@bufbuild/protobuf";
import type { UpstreamResult } from "../upstream/reply.js";

export type FinalityRule =
  /** Fixed once block `number` is final. */
  | { kind: "block"; number: bigint }
  /** Fixed once the block the answer names is final; `blockOf` reads it (undefined: never cache, e.g. null or pending). */
  | { kind: "result"; blockOf: (result: UpstreamResult) => bigint | undefined };

/** Per JSON-RPC method: the rule for one request, or undefined when this request's answer may change. */
export type FinalityRules = ReadonlyMap<string, (request: Message) => FinalityRule | undefined>;
