/**
 * Answers one JSON-RPC request text (a single request or a batch), whatever
 * carried it: the HTTP handler and the WebSocket handler both hand the text
 * here and send back what it returns, so the envelope rules, batch counting
 * and rate limits live in one place.
 */
import type { KeyQuotas } from "../auth/key-quotas.js";
import { Code } from "@connectrpc/connect";
import { invalidRequest, upstreamBadResponse } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { type Entry, readEnvelope } from "./envelope.js";
import type { ApiKey } from "../auth/api-keys.js";
import type { CallSignal } from "../call-signal.js";
import type { Gateway } from "../gateway.js";
import type { Network } from "../upstream/network.js";
import { HELD_FROM_BYTES, type HeldAnswers } from "../upstream/held-answers.js";
import { CHECKED_RESULT_BYTES, rescannedResult, resultMemory, type UpstreamResult } from "../upstream/reply.js";
import { isJsonValue } from "./json-check.js";
import { type NativeCallContext, nativeCallContext, type Outcome, renderResponse, runNativeCall } from "./native-call.js";

export interface AnswerContext extends NativeCallContext {
  /** Most requests in one batch; a larger batch is answered with one -32600. */
  maxBatchSize: number;
  /** Per-key quotas: the text holds one of the key's concurrent requests while it is answered. */
  quotas?: KeyQuotas | undefined;
  /** What the answers hold of the process's reply memory until their response has left. */
  heldAnswers?: HeldAnswers | undefined;
  /**
   * The answers go on a connection they share with other answers (a WebSocket): its large results are checked
   * to be JSON before they go, as a batch's are.
   */
  sharedConnection?: boolean;
}

/**
 * A large result is forwarded unparsed when it is the whole response (a malformed one costs its own caller, as a
 * pass-through proxy's would); one spliced among others, in a batch or on a WebSocket, is checked first: unchecked,
 * it made the whole text unreadable, its siblings' answers lost with it, and a WebSocket client could not tell
 * which call it answered, which then waited for its timeout (found from outside). A result that fails the check
 * because a member of the node's own followed it (readReply's fast path takes the text up to the closing brace) is
 * the result alone, as the typed door reads it and as an HTTP caller reads its response: found from outside (h94),
 * such a reply was -32052 on a WebSocket only.
 */
function withCheckedResult(outcome: Outcome): Outcome {
  const r = outcome.result;
  if (r === undefined || r.end - r.start <= CHECKED_RESULT_BYTES || r.jsonChecked === true || isJsonValue(r.body, r.start, r.end)) return outcome;
  let alone: UpstreamResult | undefined;
  try {
    alone = rescannedResult(r);
  } catch (err) {
    if (err instanceof GatewayError) return { error: err };
    throw err;
  }
  if (alone !== undefined && isJsonValue(alone.body, alone.start, alone.end)) return { result: alone };
  return { error: upstreamBadResponse("the result is not valid JSON") };
}

/**
 * A call's outcome in logs and metrics: "ok", the JSON-RPC error code, or
 * "Canceled" (as the typed doors say it) for a call its client left: its
 * -32603 is not an internal error, and alerts on those should not fire.
 */
export function outcomeLabel(error: GatewayError | undefined): string {
  if (error === undefined) return "ok";
  return error.grpcCode === Code.Canceled ? CANCELED_OUTCOME : String(error.code);
}

export const CANCELED_OUTCOME = Code[Code.Canceled];

/** One call of the text and how it ended (outcomeLabel), for logs and metrics. */
export interface CallRecord {
  method: string;
  outcome: string;
}

export interface Answer {
  /**
   * The response text as parts to write in order (a large result stays in the
   * pieces it arrived in), or undefined when nothing is sent back (only notifications).
   */
  body: Buffer[] | undefined;
  /** The HTTP status: a single request's error status (or a rate limit's 429), else 200. */
  status: number;
  /** Seconds to wait before retrying, when the key's rate limit refused the text. */
  retryAfterSeconds?: number | undefined;
  calls: CallRecord[];
  /** Gives back what the answers held of the reply budget: the door calls it once the response has left. */
  release?: (() => void) | undefined;
}

/** The context one native request text is answered in (per HTTP request; per WebSocket connection). */
export function answerContext(gateway: Gateway, key: ApiKey, network: Network, signal: CallSignal): AnswerContext {
  return Object.assign(nativeCallContext(gateway, key, network, signal), { maxBatchSize: gateway.limits.maxBatchSize, quotas: gateway.quotas, heldAnswers: gateway.heldAnswers });
}

/** How a text or member that is not a request is named in logs and metrics (its method, if any, cannot be trusted). */
const INVALID = "(invalid)";

function envelopeError(error: GatewayError, status = 200): Answer {
  return {
    body: [Buffer.from(`{"jsonrpc":"2.0","id":null,"error":${error.toJson()}}`)],
    status,
    retryAfterSeconds: error.retryAfterSeconds,
    calls: [{ method: INVALID, outcome: String(error.code) }],
  };
}

/**
 * What a text's answers hold of the process's reply memory (HeldAnswers)
 * until its response has left: a batch is answered once every call in it is,
 * as the provider answers batches, so each answer waits in memory for the
 * rest (24 answers of 200 MB held 5 GB, found from outside), and any answer
 * waits for a client that reads slowly. An answer that does not fit is
 * dropped and its call gets -32005 in its place.
 */
class AnswerHolds {
  readonly #held: HeldAnswers;
  readonly #key: ApiKey;
  readonly #batch: boolean;
  readonly #releases: (() => void)[] = [];
  /** Released: answers that come later (a batch that failed as a whole) take nothing, so nothing stays taken. */
  #released = false;

  constructor(held: HeldAnswers, key: ApiKey, batch: boolean) {
    this.#held = held;
    this.#key = key;
    this.#batch = batch;
  }

  readonly keep = (outcome: Outcome): Outcome => {
    const result = outcome.result;
    if (result === undefined || this.#released) return outcome;
    const release = this.#held.hold(resultMemory(result), result.end - result.start, this.#key);
    if (typeof release === "string") {
      return { error: this.#batch ? this.#held.refusal("this batch's answers", "; send the large calls in smaller batches", release) : this.#held.refusal("the answers waiting for their clients", "", release) };
    }
    this.#releases.push(release);
    return outcome;
  };

  readonly release = (): void => {
    this.#released = true;
    for (const release of this.#releases) release();
    this.#releases.length = 0;
  };
}

function run(entry: Entry, ctx: AnswerContext): Promise<Outcome> {
  return entry.error !== undefined ? Promise.resolve({ error: entry.error }) : runNativeCall(entry.call, ctx);
}

/**
 * The response to a text refused as a whole before any call ran (its key,
 * origin or user agent): every call gets `error` under its own id, as a
 * key's rate limit does. A text that is not JSON-RPC, or only
 * notifications, get one error with id null.
 */
export function refusalAnswer(text: Buffer, error: GatewayError): Buffer[] {
  const alone = (): Buffer[] => [Buffer.from(`{"jsonrpc":"2.0","id":null,"error":${error.toJson()}}`)];
  let envelope;
  try {
    envelope = readEnvelope(text);
  } catch {
    return alone();
  }
  const outcome: Outcome = { error };
  const parts: Buffer[] = [];
  for (const entry of envelope.entries) {
    const id = entry.error !== undefined ? entry.id : entry.call.id;
    if (id === undefined) continue;
    if (envelope.batch) parts.push(Buffer.from(parts.length === 0 ? "[" : ","));
    for (const part of renderResponse(id, outcome)) parts.push(part);
  }
  if (parts.length === 0) return alone();
  if (envelope.batch) parts.push(Buffer.from("]"));
  return parts;
}

/**
 * How many of a batch's calls start before the loop may serve others. A batch of up to this many starts in one turn of
 * the loop, so that its calls past the connections free to the node are shared out over them at once (WaitingBatches):
 * with 64, a batch of 100 (ethers' largest) waited a round trip to the node for its last 36 calls.
 */
const BATCH_SLICE = 128;

const ignore = (): void => {};

/** Runs every call in the text and renders the response; batch answers keep the request order. */
export async function answerJsonRpc(text: Buffer, ctx: AnswerContext): Promise<Answer> {
  let envelope;
  try {
    envelope = readEnvelope(text);
  } catch (err) {
    if (err instanceof GatewayError) return envelopeError(err, err.httpStatus);
    throw err;
  }
  const entries = envelope.entries;
  let release: (() => void) | undefined;
  /**
   * The text was refused as a whole (a batch over the maximum, or the key's
   * limits): every call in it is answered with that error under its own id.
   * Under id null alone, web3.js (which matches a WebSocket batch answer by
   * its first id) waited for ever, and ethers 5's batch provider, which
   * reads an array, threw and left every call pending.
   */
  let refused: GatewayError | undefined;
  if (envelope.batch && entries.length > ctx.maxBatchSize) {
    refused = invalidRequest(`batch of ${entries.length} exceeds the maximum of ${ctx.maxBatchSize}`);
  } else {
    try {
      release = ctx.quotas?.acquire(ctx.key, "requests");
      // The provider counts a batch of N as N + 1 requests.
      await ctx.access.count(ctx.key, envelope.batch ? entries.length + 1 : 1);
    } catch (err) {
      release?.();
      if (!(err instanceof GatewayError)) throw err;
      refused = err;
    }
  }
  // Plain loops, no closures: this runs for every native request.
  let outcomes: Outcome[];
  let holds: AnswerHolds | undefined;
  if (refused !== undefined) {
    outcomes = [];
    for (let i = 0; i < entries.length; i++) outcomes.push({ error: refused });
  } else {
    try {
      if (entries.length === 1) {
        const outcome = await run(entries[0] as Entry, ctx);
        const result = outcome.result;
        // Held only when large enough to count: the small calls of the hot path allocate nothing for it.
        if (ctx.heldAnswers !== undefined && result !== undefined && result.end - result.start >= HELD_FROM_BYTES) {
          holds = new AnswerHolds(ctx.heldAnswers, ctx.key, false);
          outcomes = [holds.keep(outcome)];
        } else {
          outcomes = [outcome];
        }
      } else {
        const pending: Promise<Outcome>[] = [];
        const keep = ctx.heldAnswers === undefined ? undefined : (holds = new AnswerHolds(ctx.heldAnswers, ctx.key, true)).keep;
        const sliced = entries.length > BATCH_SLICE;
        for (let i = 0; i < entries.length; i++) {
          // A large batch starts its calls a slice at a time, letting other requests' events in between (found from
          // outside: 120 batches of 1,000 arriving together held the loop 6 s before anything else, /healthz included,
          // was read). A call started before a pause must not reject unheard meanwhile.
          if (sliced && i > 0 && i % BATCH_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
          const call = keep === undefined ? run(entries[i] as Entry, ctx) : run(entries[i] as Entry, ctx).then(keep);
          if (sliced) call.catch(ignore);
          pending.push(call);
        }
        outcomes = await Promise.all(pending);
      }
    } catch (err) {
      holds?.release();
      throw err;
    } finally {
      release?.();
    }
  }

  const calls: CallRecord[] = [];
  const parts: Buffer[] = [];
  let status = 200;
  let retryAfterSeconds: number | undefined;
  const checkResults = envelope.batch || ctx.sharedConnection === true;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as Entry;
    const outcome = checkResults ? withCheckedResult(outcomes[i] as Outcome) : (outcomes[i] as Outcome);
    calls.push({ method: entry.call ? entry.call.method.slice(0, 64) : INVALID, outcome: outcomeLabel(outcome.error) });
    const id = entry.error !== undefined ? entry.id : entry.call.id;
    if (id === undefined) continue; // a notification gets no response
    if (!envelope.batch && outcome.error !== undefined) {
      status = outcome.error.httpStatus;
      retryAfterSeconds = outcome.error.retryAfterSeconds;
    }
    if (envelope.batch) parts.push(Buffer.from(parts.length === 0 ? "[" : ","));
    for (const part of renderResponse(id, outcome)) parts.push(part);
  }
  if (refused !== undefined) {
    status = refused.httpStatus;
    retryAfterSeconds = refused.retryAfterSeconds;
  }
  if (parts.length === 0) {
    holds?.release();
    // Only notifications, refused as a whole: one error under id null, as refusalAnswer gives a text refused for its key,
    // so the caller learns none of them ran (found from outside: over the rate limit or the batch maximum, HTTP 204
    // and WebSocket silence, as if they had).
    if (refused !== undefined) return { body: renderResponse("null", { error: refused }), status, retryAfterSeconds, calls };
    return { body: undefined, status, calls };
  }
  if (envelope.batch) parts.push(Buffer.from("]"));
  return { body: parts, status, retryAfterSeconds, calls, release: holds?.release };
}
