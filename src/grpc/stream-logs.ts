/**
 * EthService.StreamLogs: eth_getLogs for a block range of any size. The
 * range is fixed at the start (tags read once; a to_block past the head ends
 * at the head) and walked in pages; each
 * page is one eth_getLogs through the same path and policy as GetLogs (the
 * key's allowlists, the 10,000-result and 10-second limits), and a page that
 * hits a limit is halved and asked again. Every page after the first counts
 * against the key's rate limit, as the separate calls it replaces would.
 */
import { create } from "@bufbuild/protobuf";
import { Code, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  EthService,
  GetLogsRequestSchema,
  type GetLogsResponse,
  type StreamLogsRequest,
  type StreamLogsResponse,
  StreamLogsResponseSchema,
} from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { type Log, type LogFilter, LogFilterSchema } from "../../gen/nodegate/eth/v1/log_pb.js";
import { type BlockId, BlockIdSchema, BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { CodecError } from "../codec/codec-error.js";
import { TAG_NAMES } from "../codec/eth-types.js";
import { invalidParams, methodNotFound } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { Gateway } from "../gateway.js";
import { type InvokeContext, invokeMethod } from "../methods/invoke.js";
import { ChainReader } from "../subscriptions/chain-reader.js";
import { type LogPage, logPages } from "../subscriptions/log-pages.js";
import { handlerError } from "./errors.js";
import { admitEthCall } from "./subscription-streams.js";
import { decodeResult } from "./typed-services.js";

/**
 * Logs, and encoded bytes, per message above which a page is sent as several
 * messages (split between blocks), to stay under gRPC's usual 4 MiB message
 * limit (grpc-go's, grpc-java's and C-core's default): counting logs alone
 * let 120 logs of 100 KiB of data each make one 12 MiB message, which a Go
 * client refused. Only a single block larger than this is sent larger.
 */
const MESSAGE_LOGS = 1000;
const MESSAGE_BYTES = 1024 * 1024;

/** A log's encoded size, near enough to bound a message: its variable parts, plus the fixed ones (hashes, address, numbers) with their tags. */
function logBytes(log: Log): number {
  let extras = 0;
  const unknown = log.jsonExtras?.unknownFields;
  if (unknown !== undefined) for (const key in unknown) extras += key.length + (unknown[key]?.length ?? 0) + 8;
  return (log.data?.length ?? 0) + log.topics.length * 34 + extras + 160;
}

const hex = (bytes: Uint8Array): string => `0x${Buffer.from(bytes).toString("hex")}`;

async function blockNumberOf(id: BlockId | undefined, reader: ChainReader, field: string): Promise<number> {
  if (id === undefined) return reader.numberOfTag("latest");
  const kind = id.kind;
  // Present but empty (Go's &BlockId{}): refused, as GetLogs refuses it, rather than read as latest.
  if (kind.case === undefined) throw invalidParams(`filter.${field}: block is unset: set number, tag or hash (in JSON, a tag is named in full, as "BLOCK_TAG_LATEST")`);
  if (kind.case === "number") {
    // Beyond any chain's height, so past the head: the range ends there (to_block) or is still to come (from_block).
    return kind.value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(kind.value);
  }
  if (kind.case === "tag") {
    if (kind.value === BlockTag.EARLIEST) return 0;
    // A range cannot end in the block being built; its logs come with the next block.
    if (kind.value === BlockTag.PENDING) return reader.numberOfTag("latest");
    const name = TAG_NAMES.get(kind.value);
    if (name === undefined) throw invalidParams(`filter.${field}: want a block number or tag`);
    return reader.numberOfTag(name);
  }
  throw invalidParams(`filter.${field}: a range takes a block number or tag, not a hash (use filter.block_hash for one block)`);
}

/**
 * A page as messages: one when it is small, else several that split it
 * between blocks. Each message covers its blocks completely, and the
 * messages of a page cover the page without a gap.
 */
export function* pageMessages(page: LogPage<Log>): Generator<StreamLogsResponse> {
  const { logs } = page;
  let from = page.from;
  let i = 0;
  do {
    const chunk: Log[] = [];
    let chunkBytes = 0;
    let lastBlock = from;
    while (i < logs.length) {
      const block = logs[i]?.blockNumber;
      let j = i;
      let blockBytes = 0;
      while (j < logs.length && logs[j]?.blockNumber === block) blockBytes += logBytes(logs[j++] as Log);
      if (chunk.length > 0 && (chunk.length + (j - i) > MESSAGE_LOGS || chunkBytes + blockBytes > MESSAGE_BYTES)) break;
      chunk.push(...logs.slice(i, j));
      chunkBytes += blockBytes;
      lastBlock = block === undefined ? lastBlock : Number(block);
      i = j;
    }
    const to = i >= logs.length ? page.to : lastBlock;
    yield create(StreamLogsResponseSchema, { logs: chunk, fromBlock: BigInt(from), toBlock: BigInt(to) });
    from = to + 1;
  } while (i < logs.length);
}

async function* streamLogs(gateway: Gateway, request: StreamLogsRequest, ctx: HandlerContext): AsyncGenerator<StreamLogsResponse> {
  try {
    const filter: LogFilter = request.filter ?? create(LogFilterSchema);
    const { key, network } = await admitEthCall(gateway, ctx, "eth_getLogs", filter.address.map(hex));
    const spec = gateway.table.byRpc(EthService.method.getLogs);
    if (spec === undefined) throw methodNotFound("eth_getLogs");
    const invokeCtx: InvokeContext = gateway.invokeContext(key, network, ctx.signal);
    const getLogs = async (pageFilter: LogFilter): Promise<Log[]> => {
      const result = await invokeMethod(spec, create(GetLogsRequestSchema, { filter: pageFilter }), invokeCtx).catch((err: unknown) => {
        if (err instanceof CodecError) throw invalidParams(`invalid filter: ${err.message}`);
        throw err;
      });
      return (decodeResult(spec, result) as GetLogsResponse).logs;
    };

    if (filter.blockHash !== undefined) {
      if (filter.fromBlock !== undefined || filter.toBlock !== undefined) throw invalidParams("filter: block_hash excludes from_block and to_block");
      const logs = await getLogs(filter);
      const head = await new ChainReader(network, gateway.limits).headByHash(hex(filter.blockHash));
      if (head === undefined) throw new GatewayError({ code: -32001, message: `no block with hash ${hex(filter.blockHash)}`, grpcCode: Code.NotFound });
      yield* pageMessages({ from: head.number, to: head.number, logs });
      return;
    }

    const reader = new ChainReader(network, gateway.limits);
    const from = await blockNumberOf(filter.fromBlock, reader, "from_block");
    const askedTo = await blockNumberOf(filter.toBlock, reader, "to_block");
    const toIsNumber = filter.toBlock?.kind.case === "number";
    // Two numbers the wrong way round are the caller's mistake; a tag read as a block before from_block means the
    // range is still to come (a client resuming "from the last to_block + 1 to latest" before a new block).
    if (from > askedTo && toIsNumber) throw invalidParams(`filter: from_block ${from} is after to_block ${askedTo}`);
    // A page must not claim blocks the node does not have yet: a client resuming after it would miss their logs.
    const to = toIsNumber ? Math.min(askedTo, await reader.numberOfTag("latest")) : askedTo;
    if (from > to) return; // the whole range is still to come
    let calls = 0;
    const pages = logPages(
      from,
      to,
      async (pageFrom, pageTo) => {
        // The stream was admitted as one request; each further eth_getLogs counts as one more.
        if (calls++ > 0) await gateway.access.count(key, 1);
        const pageFilter = create(LogFilterSchema, {
          ...filter,
          fromBlock: create(BlockIdSchema, { kind: { case: "number", value: BigInt(pageFrom) } }),
          toBlock: create(BlockIdSchema, { kind: { case: "number", value: BigInt(pageTo) } }),
        });
        return getLogs(pageFilter);
      },
      { pageBlocks: gateway.subscriptions.settings.logPageBlocks, maxResults: gateway.limits.getLogsMaxResults, signal: ctx.signal },
    );
    for await (const page of pages) yield* pageMessages(page);
  } catch (err) {
    throw handlerError(err, ctx.signal);
  }
}

export function registerStreamLogs(router: ConnectRouter, gateway: Gateway): void {
  // Registered after the typed services: this path replaces the "unimplemented" handler Connect gave the stream there.
  router.rpc(EthService.method.streamLogs, (request: StreamLogsRequest, ctx) => streamLogs(gateway, request, ctx));
}
