/**
 * The typed subscriptions: EthService.SubscribeNewHeads, SubscribeLogs and
 * SubscribeNewPendingTransactions as Connect server streams, fed by the same
 * hubs as eth_subscribe on the native WebSocket path. Access is checked as
 * for the unary RPCs (plus the eth_subscribe method allowlist); each stream
 * reads from a bounded queue, and a client that lets it overflow is ended
 * with RESOURCE_EXHAUSTED.
 */
import { decodeRespelling } from "../codec/lenient-result.js";
import { create, type Message } from "@bufbuild/protobuf";
import { Code, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { type Block, BlockSchema } from "../../gen/nodegate/eth/v1/block_pb.js";
import {
  EthService,
  type SubscribeLogsRequest,
  type SubscribeLogsResponse,
  SubscribeLogsResponseSchema,
  type SubscribeNewHeadsRequest,
  type SubscribeNewHeadsResponse,
  SubscribeNewHeadsResponseSchema,
  type SubscribeNewPendingTransactionsResponse,
  SubscribeNewPendingTransactionsResponseSchema,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type Log, type LogFilter, LogSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import type { ApiKey } from "../auth/api-keys.js";
import { acquireSubscription } from "../auth/key-quotas.js";
import { CodecError } from "../codec/codec-error.js";
import { decodeKeepingNumbers } from "../codec/exact-numbers.js";
import { decodeData } from "../codec/hex.js";
import type { CodecRegistry } from "../codec/message-codec.js";
import { invalidParams, resultNotTypeable, shuttingDown } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { Gateway } from "../gateway.js";
import { createCodecRegistry } from "../methods/default-table.js";
import { tooManyParams } from "../methods/policies/get-logs-limits.js";
import { EventQueue } from "../subscriptions/event-queue.js";
import type { FeedEvent } from "../subscriptions/events.js";
import type { Subscription } from "../subscriptions/hub.js";
import { canonicalLogFilter, filterSize, type Topic } from "../subscriptions/topic.js";
import type { Network } from "../upstream/network.js";
import { handlerError, toConnectError } from "./errors.js";
import { cutTransportUnlessClosed } from "./node-request.js";
import { announceLive } from "./stream-head.js";
import { READER_GRACE_MS } from "../subscriptions/reader-pace.js";
import { credentialsFrom, typedCallNetwork } from "./typed-services.js";

const hex = (bytes: Uint8Array): string => `0x${Buffer.from(bytes).toString("hex")}`;

/** Any failure as a GatewayError (a bug becomes an internal error, logged with its cause). */
function asGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  return new GatewayError({ code: -32603, message: "internal error", grpcCode: Code.Internal, cause: err });
}

/** The caller's key and Ethereum network, checked as for a unary call of `method`. */
export async function admitEthCall(
  gateway: Gateway,
  ctx: HandlerContext,
  method: string,
  addresses: string[] | undefined,
): Promise<{ key: ApiKey; network: Network }> {
  const key = await gateway.access.admit(credentialsFrom(ctx.requestHeader), 1);
  const network = typedCallNetwork(gateway, ctx.requestHeader, method, "eth");
  gateway.access.checkCall(key, method, addresses);
  return { key, network };
}

/** The topic of a SubscribeLogs filter: address and topics only. */
function logsTopic(filter: LogFilter | undefined): Topic & { kind: "logs" } {
  if (filter?.fromBlock !== undefined || filter?.toBlock !== undefined || filter?.blockHash !== undefined) {
    throw invalidParams("filter: a logs subscription follows new blocks, so from_block, to_block and block_hash must be unset (resume with the request's from_block)");
  }
  const extras = filter?.jsonExtras;
  if (extras !== undefined && (Object.keys(extras.unknownFields).length > 0 || extras.nullKeys.length > 0 || extras.emptyKeys.length > 0 || extras.absentKeys.length > 0)) {
    // The node's subscription takes address and topics only; an extra key would be dropped without a word.
    throw invalidParams("filter.json_extras: a logs subscription takes address and topics only; leave json_extras unset");
  }
  const addresses = (filter?.address ?? []).map((a, i) => {
    if (a.length !== 20) throw invalidParams(`filter.address[${i}]: want 20 bytes, got ${a.length}`);
    return hex(a);
  });
  const topics = (filter?.topics ?? []).map((position, i) =>
    position.anyOf.length === 0
      ? null
      : position.anyOf.map((t, j) => {
          if (t.length !== 32) throw invalidParams(`filter.topics[${i}].any_of[${j}]: want 32 bytes, got ${t.length}`);
          return hex(t);
        }),
  );
  if (topics.length > 4) throw invalidParams(`filter.topics: a log has at most 4 topics, got ${topics.length} positions`);
  return { kind: "logs", filter: canonicalLogFilter(addresses, topics) };
}

/** Typed messages are decoded once per event, however many streams send it. */
class EventDecoder<T> {
  readonly #decoded = new WeakMap<FeedEvent, T>();
  readonly #decode: (event: FeedEvent) => T;
  readonly #what: string;

  constructor(what: string, decode: (event: FeedEvent) => T) {
    this.#what = what;
    this.#decode = decode;
  }

  decode(event: FeedEvent): T {
    let message = this.#decoded.get(event);
    if (message === undefined) {
      try {
        message = this.#decode(event);
      } catch (err) {
        if (err instanceof CodecError || err instanceof SyntaxError) throw resultNotTypeable(`eth_subscription ${this.#what}`, err.message);
        throw err;
      }
      this.#decoded.set(event, message);
    }
    return message;
  }
}

interface StreamSpec<T> {
  method: string;
  topic: Topic;
  fromBlock: bigint | undefined;
  decoder: EventDecoder<T>;
}

/** The typed subscription streams open on each gateway, each with the function that ends it (shutdown). */
const openTypedStreams = new WeakMap<Gateway, Set<(error: GatewayError) => void>>();

/**
 * Ends every typed subscription stream now (UNAVAILABLE, "shutting down"): they have no answer owed to anyone,
 * so a drain need not keep them until native WebSocket clients have had theirs.
 */
export function endTypedStreams(gateway: Gateway): void {
  drainingGateways.add(gateway);
  for (const end of [...(openTypedStreams.get(gateway) ?? [])]) end(shuttingDown());
}

/** Gateways whose drain has begun: a stream opened since (on a connection still open) is refused the same way. */
const drainingGateways = new WeakSet<Gateway>();

async function* subscriptionStream<T extends Message>(gateway: Gateway, spec: StreamSpec<T>, ctx: HandlerContext): AsyncGenerator<T> {
  let subscription: Subscription | undefined;
  let finished = false;
  let release: (() => void) | undefined;
  let leaveOpen: (() => void) | undefined;
  // Leaves the feed and frees the quota once, from whichever comes first: the generator's end, the client going away,
  // or an overflow. A stream cut behind unread writes may never see its generator resumed, so this cannot wait for it.
  const finish = (): void => {
    finished = true;
    leaveOpen?.(); // a stream cut behind unread writes may never reach its generator's finally
    subscription?.close();
    subscription = undefined;
    release?.();
    release = undefined;
  };
  ctx.signal.addEventListener("abort", finish, { once: true });
  try {
    // Found from outside: one opened on a kept-alive connection during the drain was served until the drain's end.
    if (drainingGateways.has(gateway)) throw shuttingDown();
    const addresses = spec.topic.kind === "logs" ? [...spec.topic.filter.addresses] : undefined;
    const { key, network } = await admitEthCall(gateway, ctx, "eth_subscribe", addresses);
    if (finished) return;
    // The drain may have begun while the call was admitted (a rate-limit count in Redis): found from outside.
    if (drainingGateways.has(gateway)) throw shuttingDown();
    release = acquireSubscription(gateway.quotas, key);
    if (spec.topic.kind === "logs") {
      const size = filterSize(spec.topic.filter);
      if (size > gateway.limits.getLogsMaxParams) throw tooManyParams(size, gateway.limits.getLogsMaxParams);
    }
    const fromBlock = spec.fromBlock === undefined ? undefined : Number(spec.fromBlock);
    if (fromBlock !== undefined && !Number.isSafeInteger(fromBlock)) throw invalidParams(`from_block ${spec.fromBlock} is not a block number`);
    const queue = new EventQueue(
      gateway.subscriptions.settings.clientBufferSize,
      (error) => {
        gateway.log.warn({ method: spec.method, network: network.name, reason: error.message }, "ending a slow stream subscriber");
        finish();
        // The queue's end reaches the client as this error's status when its stream moves; a stream stuck behind
        // unread writes is reset instead, once the status has had the reader's own grace to get out.
        cutTransportUnlessClosed(ctx, READER_GRACE_MS);
      },
      gateway.limits.maxWsUnreadBytes,
    );
    let open = openTypedStreams.get(gateway);
    if (open === undefined) openTypedStreams.set(gateway, (open = new Set()));
    const end = (error: GatewayError): void => {
      finish();
      queue.end(error);
    };
    open.add(end);
    leaveOpen = () => open.delete(end);
    // History (with from_block) flows into the queue while this loop reads it, so subscribe is not awaited here.
    gateway.subscriptions
      .hub(network)
      .subscribe(spec.topic, queue, { fromBlock, signal: ctx.signal })
      .then(
        (s) => {
          if (finished) s.close();
          else {
            subscription = s;
            announceLive(ctx);
          }
        },
        (err: unknown) => {
          if (!(err instanceof GatewayError)) gateway.log.error({ err, method: spec.method }, "subscribing failed");
          queue.end(asGatewayError(err));
        },
      );
    for await (const event of queue.events(ctx.signal)) yield spec.decoder.decode(event);
  } catch (err) {
    throw handlerError(err, ctx.signal);
  } finally {
    ctx.signal.removeEventListener("abort", finish);
    finish();
  }
}

/** A notification's value as its message, read as a typed result is (lenient hex, exact numbers in unknown members). */
function decodeEvent<T>(text: string, decode: (json: unknown) => T): T {
  return decodeKeepingNumbers(JSON.parse(text), () => text, (json) => decodeRespelling(decode, json));
}

export function registerSubscriptionStreams(router: ConnectRouter, gateway: Gateway, registry: CodecRegistry = createCodecRegistry()): void {
  const blockCodec = registry.message<Block>(BlockSchema);
  const logCodec = registry.message<Log>(LogSchema);
  const heads = new EventDecoder<SubscribeNewHeadsResponse>("newHeads", (event) => {
    const header = decodeEvent(event.text, (json) => blockCodec.decode(json));
    header.transactions = undefined;
    return create(SubscribeNewHeadsResponseSchema, { header });
  });
  const logs = new EventDecoder<SubscribeLogsResponse>("logs", (event) =>
    create(SubscribeLogsResponseSchema, { log: decodeEvent(event.text, (json) => logCodec.decode(json)) }),
  );
  const pending = new EventDecoder<SubscribeNewPendingTransactionsResponse>("newPendingTransactions", (event) =>
    create(SubscribeNewPendingTransactionsResponseSchema, { transactionHash: decodeData(JSON.parse(event.text), { length: 32 }) }),
  );

  // Registered after the typed services: these paths replace the "unimplemented" handlers Connect gave the streams there.
  router.rpc(EthService.method.subscribeNewHeads, (request: SubscribeNewHeadsRequest, ctx) =>
    subscriptionStream(gateway, { method: "SubscribeNewHeads", topic: { kind: "newHeads" }, fromBlock: request.fromBlock, decoder: heads }, ctx),
  );
  router.rpc(EthService.method.subscribeLogs, (request: SubscribeLogsRequest, ctx) => {
    let topic: Topic;
    try {
      topic = logsTopic(request.filter);
    } catch (err) {
      const error = toConnectError(err);
      return (async function* () {
        throw error;
      })();
    }
    return subscriptionStream(gateway, { method: "SubscribeLogs", topic, fromBlock: request.fromBlock, decoder: logs }, ctx);
  });
  router.rpc(EthService.method.subscribeNewPendingTransactions, (_request, ctx) =>
    subscriptionStream(gateway, { method: "SubscribeNewPendingTransactions", topic: { kind: "newPendingTransactions" }, fromBlock: undefined, decoder: pending }, ctx),
  );
}
