/**
 * Calling nodegate's typed EthService from Node with @grpc/grpc-js.
 *
 * The messages are the protobuf-es code generated in gen/ from proto/ (any
 * protobuf-es or protoc-gen-es output works the same way); grpc-js carries
 * them, and nodegate reads the API key from the x-api-key header.
 *
 * Against `npm start` (it prints the address and a development key):
 *   NODEGATE_URL=http://127.0.0.1:8080 NODEGATE_KEY=<key> npx tsx examples/node/client.ts
 * NODEGATE_ADDRESS picks the account whose balance is shown (default: Anvil's first account).
 */
import { create, type DescMessage, type DescMethodUnary, fromBinary, type MessageInitShape, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import { BlockTag } from "../../gen/nodegate/eth/v1/primitives_pb.js";
import { EthService } from "../../gen/nodegate/eth/v1/eth_service_pb.js";
import { JsonRpcErrorSchema } from "../../gen/nodegate/jsonrpc/v1/error_pb.js";

const url = process.env.NODEGATE_URL ?? "http://127.0.0.1:8080";
const key = process.env.NODEGATE_KEY;
const account = process.env.NODEGATE_ADDRESS ?? "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

/** One unary call: protobuf-es does the bytes, grpc-js the HTTP/2. */
function unary<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  metadata: grpc.Metadata,
): Promise<MessageShape<O>> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      `/${method.parent.typeName}/${method.name}`,
      (message: MessageShape<I>) => Buffer.from(toBinary(method.input, message)),
      (bytes: Buffer) => fromBinary(method.output, bytes),
      create(method.input, request),
      metadata,
      { deadline: Date.now() + 10_000 },
      (err, response) => (err ? reject(err) : resolve(response as MessageShape<O>)),
    );
  });
}

const hex = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}`;
const fromHex = (text: string) => Buffer.from(text.replace(/^0x/, ""), "hex");
/** nodegate's Uint256 is big-endian bytes without leading zeros. */
const uint256 = (value: { value: Uint8Array } | undefined) => (value && value.value.length > 0 ? BigInt(hex(value.value)) : 0n);

/** nodegate puts the JSON-RPC error in the status details (grpc-status-details-bin). */
function describeError(err: grpc.ServiceError): string {
  const [details] = err.metadata?.get("grpc-status-details-bin") ?? [];
  const status = details instanceof Buffer ? fromBinary(StatusSchema, details) : undefined;
  const jsonRpc = status?.details.map((any) => anyUnpack(any, JsonRpcErrorSchema)).find((e) => e !== undefined);
  const code = grpc.status[err.code] ?? String(err.code);
  return jsonRpc ? `${code}: JSON-RPC error ${jsonRpc.code} ${jsonRpc.message}` : `${code}: ${err.details}`;
}

async function main(): Promise<void> {
  if (!key) throw new Error("set NODEGATE_KEY to an API key (the one in NODEGATE_API_KEYS, or the development key npm start prints when none is set)");
  const secure = url.startsWith("https://");
  const target = url.replace(/^https?:\/\//, "").replace(/\/.*$/, "");
  const client = new grpc.Client(target, secure ? grpc.credentials.createSsl() : grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("x-api-key", key);
  try {
    const { chainId } = await unary(client, EthService.method.chainId, {}, metadata);
    console.log(`chain id: ${chainId}`);
    const { block } = await unary(client, EthService.method.getBlockByNumber, { block: { kind: { case: "tag", value: BlockTag.LATEST } } }, metadata);
    const txs = block?.transactions?.hashes.length ?? 0;
    console.log(`latest block: ${block?.number} (hash ${hex(block?.hash ?? new Uint8Array())}, ${txs} transactions)`);
    const { balance } = await unary(client, EthService.method.getBalance, { address: fromHex(account) }, metadata);
    console.log(`balance of ${account}: ${uint256(balance)} wei`);
  } finally {
    client.close();
  }
}

main().catch((err: unknown) => {
  console.error(`nodegate call failed: ${"code" in (err as object) ? describeError(err as grpc.ServiceError) : (err as Error).message}`);
  process.exit(1);
});
