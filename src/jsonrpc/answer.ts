/**
 * Answers one JSON-RPC request text (a single request or a batch), whatever
 * carried it: the HTTP handler and the WebSocket handler both hand the text
 * here and send back what it returns, so the envelope rules live in one place.
 */
import { invalidRequest } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { type Entry, readEnvelope } from "./envelope.js";
import { type NativeCallContext, type Outcome, renderResponse, runNativeCall } from "./native-call.js";

export interface AnswerContext extends NativeCallContext {
  /** Most requests in one batch; a larger batch is answered with one -32600. */
  maxBatchSize: number;
}

export interface Answer {
  /** The response text, or undefined when nothing is sent back (only notifications). */
  body: Buffer | undefined;
  /** The HTTP status: a single request's error status, else 200. */
  status: number;
}

function envelopeError(error: GatewayError): Answer {
  return { body: Buffer.from(`{"jsonrpc":"2.0","id":null,"error":${error.toJson()}}`), status: 200 };
}

/** Runs every call in the text and renders the response; batch answers keep the request order. */
export async function answerJsonRpc(text: Buffer, ctx: AnswerContext): Promise<Answer> {
  let envelope;
  try {
    envelope = readEnvelope(text);
  } catch (err) {
    if (err instanceof GatewayError) return envelopeError(err);
    throw err;
  }
  if (envelope.batch && envelope.entries.length > ctx.maxBatchSize) {
    return envelopeError(invalidRequest(`batch of ${envelope.entries.length} exceeds the maximum of ${ctx.maxBatchSize}`));
  }
  const run = (entry: Entry): Promise<Outcome> =>
    entry.error !== undefined ? Promise.resolve({ error: entry.error }) : runNativeCall(entry.call, ctx);
  const outcomes = await Promise.all(envelope.entries.map(run));

  const parts: Buffer[] = [];
  let status = 200;
  envelope.entries.forEach((entry, i) => {
    const id = entry.error !== undefined ? entry.id : entry.call.id;
    if (id === undefined) return; // a notification gets no response
    const outcome = outcomes[i] as Outcome;
    if (!envelope.batch && outcome.error !== undefined) status = outcome.error.httpStatus;
    if (envelope.batch) parts.push(Buffer.from(parts.length === 0 ? "[" : ","));
    parts.push(...renderResponse(id, outcome));
  });
  if (parts.length === 0) return { body: undefined, status };
  if (envelope.batch) parts.push(Buffer.from("]"));
  return { body: Buffer.concat(parts), status };
}
