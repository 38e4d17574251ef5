/**
 * Server-streaming calls with a real @grpc/grpc-js client (protobuf-es
 * messages as the serializer): the test reads messages one by one, can
 * pause reading (a slow consumer), and sees how the stream ended.
 */
import { type DescMethodServerStreaming, fromBinary, type Message, type MessageShape, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";

export interface GrpcJsStream<T> {
  readonly call: grpc.ClientReadableStream<T>;
  /** Every message received so far, in order. */
  readonly received: T[];
  /** The next message not yet taken by next(); rejects when the stream ends first. */
  next(): Promise<T>;
  /** Waits until `count` messages have arrived. */
  waitFor(count: number): Promise<T[]>;
  /** Resolves with the error that ended the stream, or undefined when it ended OK. */
  readonly ended: Promise<grpc.ServiceError | undefined>;
  cancel(): void;
}

export function grpcJsStreamClient(address: string): grpc.Client {
  return new grpc.Client(address, grpc.credentials.createInsecure());
}

export function openGrpcJsStream<M extends DescMethodServerStreaming>(
  client: grpc.Client,
  method: M,
  request: MessageShape<M["input"]>,
  metadata: Record<string, string>,
): GrpcJsStream<MessageShape<M["output"]>> {
  type T = MessageShape<M["output"]>;
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  const call = client.makeServerStreamRequest<Message, T>(
    `/${method.parent.typeName}/${method.name}`,
    (m) => Buffer.from(toBinary(method.input, m as MessageShape<M["input"]>)),
    (b) => fromBinary(method.output, b) as T,
    request,
    md,
  );
  const received: T[] = [];
  let taken = 0;
  const waiters: (() => void)[] = [];
  let endError: grpc.ServiceError | undefined;
  let done = false;
  const wake = (): void => {
    for (const w of waiters.splice(0)) w();
  };
  call.on("data", (m: T) => {
    received.push(m);
    wake();
  });
  const ended = new Promise<grpc.ServiceError | undefined>((resolve) => {
    call.on("error", (err: grpc.ServiceError) => {
      endError = err;
      done = true;
      wake();
      resolve(err);
    });
    call.on("end", () => {
      done = true;
      wake();
      resolve(endError);
    });
  });
  const waitUntil = async (ok: () => boolean): Promise<void> => {
    while (!ok()) {
      if (done) throw endError ?? new Error("the stream ended");
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return {
    call,
    received,
    async next() {
      await waitUntil(() => received.length > taken);
      return received[taken++] as T;
    },
    async waitFor(count) {
      await waitUntil(() => received.length >= count);
      return received.slice(0, count);
    },
    ended,
    cancel: () => call.cancel(),
  };
}
