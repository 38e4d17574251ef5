/**
 * nodegate's own errors, in one place (fastify style): each has a stable
 * JSON-RPC code, a gRPC code and an HTTP status. Codes -32050..-32059 are
 * nodegate's and collide with no provider, eRPC or proxyd code.
 */
import { Code } from "@connectrpc/connect";
import { FAMILY_NAMES } from "../methods/method-family.js";
import { GatewayError } from "./gateway-error.js";

export const NODEGATE_CODES = {
  upstreamUnavailable: -32050,
  upstreamTimeout: -32051,
  upstreamBadResponse: -32052,
  resultNotTypeable: -32053,
  subscriberTooSlow: -32054,
  historyLost: -32055,
  shuttingDown: -32056,
} as const;

export function parseError(): GatewayError {
  return new GatewayError({ code: -32700, message: "parse error", grpcCode: Code.InvalidArgument });
}

export function invalidRequest(reason: string): GatewayError {
  return new GatewayError({ code: -32600, message: `invalid request: ${reason}`, grpcCode: Code.InvalidArgument });
}

/** A request whose JSON holds more arrays and objects than parsing it may cost (codec/json-weight.ts). */
export function tooManyJsonContainers(max: number): GatewayError {
  return new GatewayError({
    code: -32600,
    message: `invalid request: the request holds more than ${max} JSON arrays and objects`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 413,
  });
}

export function methodNotFound(method: string): GatewayError {
  return new GatewayError({
    code: -32601,
    message: `the method ${method} does not exist/is not available`,
    grpcCode: Code.Unimplemented,
  });
}

/** A family's name as messages write it ("eth" -> "Ethereum"); an unknown one as it is. */
const familyName = (family: string): string => (FAMILY_NAMES as Readonly<Record<string, string>>)[family] ?? family;

export interface WrongNetworkFamily {
  method: string;
  /** The chain family the method belongs to (eth, starknet). */
  methodFamily: string;
  network: string;
  networkFamily: string;
  /** How the caller reaches a network of the method's family, in the terms of their front door. */
  fix: string;
}

/**
 * A method of one chain family sent to a network of another (a Starknet
 * method on the Ethereum network). JSON-RPC callers get -32601, what a node
 * of the other family would answer, with a message that says where to go;
 * typed callers get INVALID_ARGUMENT, since the request names the network.
 */
export function wrongNetworkFamily(w: WrongNetworkFamily): GatewayError {
  const methodFamily = familyName(w.methodFamily);
  const article = /^[AEIOU]/i.test(methodFamily) ? "an" : "a";
  return new GatewayError({
    code: -32601,
    message: `${w.method} is ${article} ${methodFamily} method, but network "${w.network}" serves ${familyName(w.networkFamily)} methods; ${w.fix}`,
    grpcCode: Code.InvalidArgument,
  });
}

/** The fix for a wrong-family call when no network of the method's family is configured. */
export function noNetworkOfFamily(family: string): string {
  return `this nodegate has no ${familyName(family)} network configured`;
}

export function invalidParams(message: string): GatewayError {
  return new GatewayError({ code: -32602, message, grpcCode: Code.InvalidArgument });
}

/** The upstream could not be reached or failed at the transport level (refused, reset, HTTP 5xx). */
export function upstreamUnavailable(reason: string, cause?: unknown, retryAfterSeconds?: number): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamUnavailable,
    message: `upstream unavailable: ${reason}`,
    grpcCode: Code.Unavailable,
    httpStatus: 503,
    cause,
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  });
}

/** The bare HTTP 429s (no JSON-RPC body) upstreamRateLimited made: told apart by identity, not by their words. */
const bareRateLimits = new WeakSet<GatewayError>();

/**
 * The node's front answered HTTP 429 with no JSON-RPC body: an outage for the circuit (paused for its Retry-After,
 * `retryAfterSeconds`), and a rate-limit refusal for the pace of nodegate's own reads (isUpstreamRateLimited).
 */
export function upstreamRateLimited(retryAfterSeconds?: number): GatewayError {
  const err = upstreamUnavailable("HTTP 429", undefined, retryAfterSeconds);
  bareRateLimits.add(err);
  return err;
}

export function isUpstreamRateLimited(err: GatewayError): boolean {
  return bareRateLimits.has(err);
}

/**
 * The upstream connection dropped while the request was in flight, and the
 * request was not retried: its method may already have taken effect, or its
 * one retry was lost too. Same code as upstreamUnavailable: callers that
 * handle "upstream unavailable" handle this.
 */
export function upstreamConnectionLost(method: string, retried: boolean): GatewayError {
  const why = retried ? "it was lost again on its one retry" : `${method} is not retried because it may already have taken effect`;
  return new GatewayError({
    code: NODEGATE_CODES.upstreamUnavailable,
    message: `upstream unavailable: the connection was lost while ${method} was in flight; ${why}`,
    grpcCode: Code.Unavailable,
    httpStatus: 503,
  });
}

/**
 * A call not safe to repeat was on a kept-alive connection that the server closed as the request went out, before
 * any reply (servers close connections idle past their keep-alive, and one may cross a request on its way). Not an
 * outage: the node may well be up (found from outside: a front recycling connections opened the circuit, and every
 * caller was told calls were paused). Not sent again, since the node may have taken it.
 */
export function keptAliveConnectionClosed(method: string): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamUnavailable,
    message: `upstream unavailable: the node closed a kept-alive connection as ${method} went out on it, before any reply; ${method} is not sent again, as whether it took effect is unknown`,
    grpcCode: Code.Unavailable,
    httpStatus: 503,
    outage: false,
  });
}

/**
 * A call safe to repeat whose kept-alive connection the node closed as it went out, before any reply, while the
 * node's circuit was open (its provider's Retry-After pause, or a cooldown): not sent again to a node asked to rest.
 * An outage, as a reset is: a partner may answer it.
 */
export function keptAliveClosedWhileResting(method: string): GatewayError {
  return upstreamUnavailable(`the node closed a kept-alive connection as ${method} went out on it, before any reply, while calls to it are paused (its circuit is open); ${method} was not sent again`);
}

/**
 * A call that waited for a connection to the node (all busy) when the node's circuit opened: failed unsent, so its
 * caller knows it did not take effect (a write may be sent again). Not an outage of its own: the circuit has opened.
 */
export function notSentCircuitOpened(method: string): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamUnavailable,
    message: `upstream unavailable: the node stopped answering while ${method} waited for a connection to it; ${method} was not sent`,
    grpcCode: Code.Unavailable,
    httpStatus: 503,
    outage: false,
  });
}

/** Errors of calls whose deadline ran out while they waited for one of nodegate's connections to the node. */
const waitedForConnection = new WeakSet<GatewayError>();

/**
 * Whether the call's deadline ran out while it waited for a connection to the node (all busy): no outage by itself,
 * but nodegate's own chain id question that waited so while nothing at all was heard from the node says that every
 * connection is held by calls the node does not answer (see Network's silence check).
 */
export function ranOutWaitingForConnection(err: GatewayError): boolean {
  return waitedForConnection.has(err);
}

export function upstreamTimeout(timeoutMs: number, waitedMs?: number): GatewayError {
  // A call that first waited for one of nodegate's connections to the node was not ignored by the node for the whole deadline.
  const waited = waitedMs === undefined ? "" : ` (${Math.round(waitedMs)} ms of them waiting for a connection to the node)`;
  const err = new GatewayError({
    code: NODEGATE_CODES.upstreamTimeout,
    message: `upstream timeout: no answer within ${timeoutMs} ms${waited}`,
    grpcCode: Code.DeadlineExceeded,
    httpStatus: 504,
    outage: waitedMs === undefined,
  });
  if (waitedMs !== undefined) waitedForConnection.add(err);
  return err;
}

/** The upstream answered with something that is not a JSON-RPC response to our request. */
export function upstreamBadResponse(reason: string, cause?: unknown): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamBadResponse,
    message: `upstream returned an invalid response: ${reason}`,
    grpcCode: Code.Unavailable,
    httpStatus: 502,
    cause,
  });
}

/** The most of a malformed error's text passed on to the caller. */
const MALFORMED_ERROR_SHOWN = 1024;

/**
 * A reply whose error is not a JSON-RPC error object ({"code":-32000} with no message, a string code, a bare string):
 * the node answered this call, so it is no outage (found from outside: a node that left out one method's error
 * message opened the circuit for every caller after five calls, and readiness went with it). The node's error, as
 * sent, is the data, so the caller still reads what the node said. Answered HTTP 200, as the node's own errors are:
 * a 502 made viem send the call four times (found from outside).
 */
export function malformedNodeError(reason: string, text: string): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamBadResponse,
    message: `upstream returned an invalid response: ${reason}`,
    ...(text.length <= MALFORMED_ERROR_SHOWN ? { data: text } : {}),
    grpcCode: Code.Unavailable,
    httpStatus: 200,
    outage: false,
  });
}

/** The node's answer is valid JSON-RPC but does not fit the typed schema (typed path only). */
export function resultNotTypeable(method: string, reason: string): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.resultNotTypeable,
    message: `the ${method} result does not fit the typed schema: ${reason}`,
    grpcCode: Code.Internal,
  });
}

/** A fault inside nodegate (a bug) while answering one call; the other calls of a batch are still answered. */
export function internalError(cause: unknown): GatewayError {
  return new GatewayError({ code: -32603, message: "internal error", grpcCode: Code.Internal, httpStatus: 500, cause });
}

/** The caller went away or cancelled; nothing is sent back. */
export function cancelled(): GatewayError {
  return new GatewayError({ code: -32603, message: "request cancelled by the caller", grpcCode: Code.Canceled, httpStatus: 499 });
}

/* Keys, allowlists and rate limits: the provider's exact texts and HTTP statuses. */

export const AUTH_MESSAGES = {
  missingKey: "project id required in the url",
  unknownKey: "invalid project id",
  badSecret: "invalid project id or project secret",
  rejected: "rejected due to project ID settings",
  rateExceeded: "project ID request rate exceeded",
  dailyExceeded: "daily request count exceeded, request rate limited",
} as const;

/** No key: in the URL (the provider's words), or in `header` on the typed door, where the URL carries none. */
export function missingKey(header?: string): GatewayError {
  const message = header === undefined ? AUTH_MESSAGES.missingKey : `project id required in the ${header} metadata`;
  return new GatewayError({ code: -32600, message, grpcCode: Code.Unauthenticated, httpStatus: 401 });
}

export function unknownKey(): GatewayError {
  return new GatewayError({ code: -32600, message: AUTH_MESSAGES.unknownKey, grpcCode: Code.Unauthenticated, httpStatus: 401 });
}

/**
 * Metadata a typed call sent more than once with different values (HTTP joins repeats with ", "): which one was meant
 * is not known. The values are not echoed: a key may be among them.
 */
export function repeatedMetadata(name: string, values: number, grpcCode: Code, httpStatus: number, fix: string): GatewayError {
  return new GatewayError({ code: -32600, message: `${name} metadata sent with ${values} different values; ${fix}`, grpcCode, httpStatus });
}

export function badSecret(): GatewayError {
  return new GatewayError({ code: -32600, message: AUTH_MESSAGES.badSecret, grpcCode: Code.Unauthenticated, httpStatus: 401 });
}

export function rejectedBySettings(): GatewayError {
  return new GatewayError({ code: -32002, message: AUTH_MESSAGES.rejected, grpcCode: Code.PermissionDenied, httpStatus: 403 });
}

export function rateLimited(window: "second" | "day", retryAfterSeconds: number): GatewayError {
  return new GatewayError({
    code: -32005,
    message: window === "second" ? AUTH_MESSAGES.rateExceeded : AUTH_MESSAGES.dailyExceeded,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 429,
    retryAfterSeconds,
  });
}

/**
 * A text that costs more than the key may spend in a second (or a day) can
 * never pass: said so in each call's error, with HTTP 200 and no Retry-After.
 * Clients resend a 429 (ethers v6 does for minutes, with its default batch of
 * 100 against the core plan's 100 per second); a 200 hands each call its
 * -32005 at once.
 */
export function overRateLimit(window: "second" | "day", cost: number, limit: number): GatewayError {
  return new GatewayError({
    code: -32005,
    // The provider's words stay as they are (callers match them); why it can never pass is in data.
    message: window === "second" ? AUTH_MESSAGES.rateExceeded : AUTH_MESSAGES.dailyExceeded,
    data: JSON.stringify(`this request counts ${cost} requests (a batch of N counts N + 1), more than the key's limit of ${limit} per ${window}; send smaller batches`),
    grpcCode: Code.ResourceExhausted,
  });
}

/**
 * nodegate's own capacity is full: a node reply dropped because the replies
 * being read at once would pass limits.maxReplyBytesInFlight, a request to a
 * WebSocket node behind too many bytes still waiting to be sent to it. Not
 * the node's fault, so not an outage (RESOURCE_EXHAUSTED), and worth a retry
 * soon.
 */
/** Errors of liveness questions whose spare connection the node's front refused (see spareRefused). */
const spareRefusals = new WeakSet<GatewayError>();

/**
 * The node's front refused the connection a liveness question opened past nodegate's cap (a front capping connections
 * per client): nodegate's own capacity, which says nothing of the node; the question then waits its turn (Network).
 */
export function spareRefused(detail: string): GatewayError {
  const err = capacityExceeded(detail);
  spareRefusals.add(err);
  return err;
}

export function isSpareRefused(err: unknown): boolean {
  return err instanceof GatewayError && spareRefusals.has(err);
}

export function capacityExceeded(detail: string): GatewayError {
  return new GatewayError({
    code: -32005,
    message: `limit exceeded: ${detail}; try again shortly`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 503,
    retryAfterSeconds: 1,
  });
}

/**
 * The node took a large request's connection and closed it without an
 * answer: nodes refuse requests over their own size limit (Anvil's is about
 * 2 MiB, geth's 5 MiB) and close, and their answer, if any, is often lost in
 * the reset. The node is up: not an outage.
 */
export function requestTooLargeForNode(detail: string): GatewayError {
  return new GatewayError({
    code: -32600,
    message: `request too large for the node: ${detail} (nodes refuse requests over their own size limit)`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 413,
  });
}

/**
 * A node's reply larger than nodegate reads for one call: the node answered, and the call asked for too much (a
 * block range's logs, a trace), so it is no outage (found from outside: one client's oversized calls opened the
 * circuit for every key, and readiness went with it), nor worth retrying as it is.
 */
export function replyTooLarge(detail: string): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.upstreamBadResponse,
    message: `upstream reply too large: ${detail}, the most nodegate reads for one call; ask for less`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 502,
  });
}

/** A call that waited its whole deadline for one of nodegate's connections to the node (all busy), and was never sent. */
export function noConnectionInTime(timeoutMs: number, waiting: number): GatewayError {
  const err = new GatewayError({
    code: -32005,
    message: `limit exceeded: no connection to the node came free within ${timeoutMs} ms (${waiting} calls were waiting); try again shortly`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 503,
    retryAfterSeconds: 1,
  });
  waitedForConnection.add(err);
  return err;
}

/* Subscriptions and streams. */

/** eth_subscribe and eth_unsubscribe over HTTP: notifications need a connection that stays open. */
export function notificationsUnsupported(method: string): GatewayError {
  return new GatewayError({
    code: -32601,
    message: `notifications not supported: ${method} needs a WebSocket connection (/ws/v3/<KEY>); typed callers use the Subscribe* streams`,
    grpcCode: Code.Unimplemented,
  });
}

/** A subscriber fell further behind than its buffer allows; its stream (or connection) is ended. */
export function subscriberTooSlow(buffered: number, bytes?: number): GatewayError {
  const waiting = bytes === undefined ? `${buffered} events were waiting to be read (subscriptions.clientBufferSize)` : `${bytes} bytes were waiting to be read (limits.maxWsUnreadBytes)`;
  return new GatewayError({
    code: NODEGATE_CODES.subscriberTooSlow,
    message: `subscriber too slow: ${waiting}; read faster or subscribe to fewer events`,
    closeReason: `subscriber too slow: ${bytes === undefined ? `${buffered} events` : `${bytes} bytes`} were waiting to be read; read faster or subscribe to fewer events`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 429,
  });
}

/** A resume whose history rounds were each overtaken by more live events than the client's buffer holds (ResumeGate). */
export function resumeOvertaken(fromBlock: number, rounds: number): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.subscriberTooSlow,
    message: `subscriber too slow: the history from block ${fromBlock} was overtaken by new events ${rounds} times over (each time more than subscriptions.clientBufferSize); read faster, or resume from a later block`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 429,
  });
}

/** A resume point further back than nodegate fetches headers for. */
export function backfillTooLong(fromBlock: number, head: number, max: number): GatewayError {
  return new GatewayError({
    code: -32602,
    message: `from_block ${fromBlock} is ${head - fromBlock} blocks behind the head (${head}); at most ${max} behind (subscriptions.maxBackfillBlocks)`,
    grpcCode: Code.OutOfRange,
  });
}

/** The most bytes a WebSocket close reason holds (RFC 6455 5.5: a control frame's 125, less the code's 2). */
export const MAX_CLOSE_REASON_BYTES = 123;

/**
 * A native close reason (GatewayError.closeReason): what happened (`head`), then `detail` as far as it fits, then
 * what to do (`advice`), which always stays. A detail that does not fit is left out, or with `cut` shortened (with
 * "…") to what fits.
 */
function closeText(head: string, detail: string, advice: string, cut = false): string {
  const room = MAX_CLOSE_REASON_BYTES - Buffer.byteLength(head) - Buffer.byteLength(advice);
  if (Buffer.byteLength(detail) <= room) return `${head}${detail}${advice}`;
  // "…" takes 3 bytes; a character split at the cut decodes as U+FFFD, which is dropped.
  if (!cut || room < 12) return `${head}${advice}`;
  return `${head}${Buffer.from(detail).subarray(0, room - 3).toString("utf8").replace(/\uFFFD+$/, "")}…${advice}`;
}

/** More blocks went by unseen than a gap nodegate fills (the node was out of reach, or its head jumped); the subscriber must resubscribe. */
export function historyLost(missed: number, max: number): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.historyLost,
    message: `subscription ended: ${missed} blocks went by unseen, more than the ${max} nodegate fetches from history (subscriptions.maxBackfillBlocks; the node was out of reach, or its head jumped); subscribe again (typed callers: with from_block)`,
    closeReason: closeText(`subscription ended: ${missed} blocks went by unseen`, `, more than the ${max} fetched from history`, "; subscribe again"),
    grpcCode: Code.Aborted,
    httpStatus: 503,
  });
}

/**
 * The node refuses the logs of one block for a logs feed's filter (as too many, or, `nodeText`, under another limit
 * at every try): they cannot be sent, so its subscribers are ended.
 */
export function blockLogsRefused(block: number, nodeText?: string): GatewayError {
  const why = nodeText === undefined ? "as more than its result limit" : `at every try (${JSON.stringify(nodeText.length > 80 ? `${nodeText.slice(0, 80)}…` : nodeText)})`;
  return new GatewayError({
    code: NODEGATE_CODES.historyLost,
    message: `subscription ended: the node refuses the logs of block ${block} for this filter ${why}, so they cannot be sent; subscribe again to follow from the next block (typed callers: from_block ${block + 1}), or with a narrower filter`,
    closeReason: closeText(
      `subscription ended: the node refuses the logs of block ${block} for this filter`,
      nodeText === undefined ? " as too many" : ` at every try (${JSON.stringify(nodeText)})`,
      "; subscribe again",
      true,
    ),
    grpcCode: Code.Aborted,
    httpStatus: 503,
  });
}

/**
 * A reorganization forked below the blocks a feed remembers: the headers and
 * logs it replaced can no longer be taken back in order, so subscribers
 * start over rather than follow an inconsistent chain.
 */
export function reorgTooDeep(forkBelow: number, window: number): GatewayError {
  // Forked below block 0: the genesis block itself differs (a dev node restarted afresh, or another chain).
  const freshChain = forkBelow <= 0;
  const replaced = freshChain ? "every block, the genesis block too (a node restarted afresh, or another chain)" : `blocks from ${forkBelow} down`;
  // Where the chain forked is below what nodegate remembers, so it cannot name the block to resume at; the caller can,
  // by hash (found from outside: resuming at the window's bottom left the replaced blocks below it unsent). After a
  // fresh chain nothing received is on it.
  const resume = freshChain
    ? "subscribe again, typed callers without from_block (what was received belongs to the old chain)"
    : `subscribe again (typed callers: with from_block one past the last block received whose hash is still on the node's chain; it forked at block ${forkBelow} or below)`;
  return new GatewayError({
    code: NODEGATE_CODES.historyLost,
    message: `subscription ended: a chain reorganization replaced ${replaced}, deeper than the ${window} blocks nodegate remembers (subscriptions.reorgWindowBlocks), so what it removed cannot be taken back; ${resume}`,
    // The native door's close reason, within 123 bytes: what happened and what to do (a native caller has no from_block).
    closeReason: freshChain
      ? "subscription ended: a fresh chain (another genesis block: a node restarted afresh, or another chain); subscribe again"
      : closeText(`subscription ended: a reorg deeper than the ${window} blocks remembered`, ` (forked at or below block ${forkBelow})`, "; subscribe again"),
    grpcCode: Code.Aborted,
    httpStatus: 503,
  });
}

/** nodegate is stopping: streams end, and clients reconnect (typed callers resume with from_block). */
export function shuttingDown(): GatewayError {
  return new GatewayError({
    code: NODEGATE_CODES.shuttingDown,
    // One text for calls and streams: it says what each should do (found from outside: a plain call was told to resume with from_block).
    message: "nodegate is shutting down; call again (subscriptions: subscribe again, typed streams with from_block after the last block received)",
    grpcCode: Code.Unavailable,
    httpStatus: 503,
    // nodegate's own stop, not the node's: no outage (found by h41: the drain deadline opened the circuit, "upstream failing").
    outage: false,
  });
}

/* Per-key quotas on what a key holds open at once. */

export const QUOTA_MESSAGES = {
  connections: "too many connections for this key",
  requests: "too many concurrent requests for this key",
  subscriptions: "too many subscriptions for this key",
} as const;

/** The key already holds its maximum of connections, requests in progress or subscriptions. */
export function quotaExceeded(kind: keyof typeof QUOTA_MESSAGES, limit: number): GatewayError {
  return new GatewayError({
    code: -32005,
    message: QUOTA_MESSAGES[kind],
    data: `{"limit":${limit}}`,
    grpcCode: Code.ResourceExhausted,
    httpStatus: 429,
    retryAfterSeconds: 1,
  });
}
