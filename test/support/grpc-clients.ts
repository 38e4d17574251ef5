/**
 * Real clients for the typed path: @grpc/grpc-js (how backend services call,
 * here with protobuf-es messages as the serializer) and connect-es.
 */
import { fromBinary, type DescMessage, type DescService, type Message, toBinary, toJsonString } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { recordSeen } from "./secret-scan.js";

/** What a typed call came back with, for the suite-wide secret scan. */
function recordError(err: unknown): void {
  const e = err as { message?: string; details?: unknown; metadata?: { toJSON?: () => unknown; toHttpHeader?: () => unknown } | Headers; rawMessage?: string };
  recordSeen("gRPC error", JSON.stringify({ message: e.message, raw: e.rawMessage, details: e.details }, (_, v) => (typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v)) ?? "");
  const md = e.metadata;
  if (md instanceof Headers) recordSeen("gRPC error metadata", JSON.stringify([...md]));
  else if (md?.toJSON) recordSeen("gRPC error metadata", JSON.stringify(md.toJSON(), (_, v) => (v?.type === "Buffer" ? Buffer.from(v.data).toString("latin1") : v)));
}

/** A grpc-js client whose methods are the service's RPCs by local name (getBlockByNumber, ...). */
export interface GrpcJsClient {
  call<O extends Message>(method: string, request: Message, metadata?: Record<string, string>): Promise<O>;
  close(): void;
}

export function grpcJsClient(address: string, service: DescService): GrpcJsClient {
  const definition: Record<string, grpc.MethodDefinition<Message, Message>> = {};
  for (const method of service.methods) {
    const input = method.input as DescMessage;
    const output = method.output as DescMessage;
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (m: Message) => Buffer.from(toBinary(input, m)),
      requestDeserialize: (b: Buffer) => fromBinary(input, b),
      responseSerialize: (m: Message) => Buffer.from(toBinary(output, m)),
      responseDeserialize: (b: Buffer) => fromBinary(output, b),
    };
  }
  const Ctor = grpc.makeGenericClientConstructor(definition as grpc.ServiceDefinition, service.name);
  const client = new Ctor(address, grpc.credentials.createInsecure()) as unknown as Record<
    string,
    (req: Message, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: Message) => void) => void
  > &
    grpc.Client;
  return {
    call<O extends Message>(method: string, request: Message, metadata: Record<string, string> = {}): Promise<O> {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(metadata)) md.set(k, v);
      const fn = client[method];
      if (typeof fn !== "function") throw new Error(`no method ${method}`);
      const output = service.methods.find((m) => m.localName === method)?.output as DescMessage;
      return new Promise<O>((resolve, reject) => {
        fn.call(client, request, md, (err, res) => {
          if (err) {
            recordError(err);
            reject(err);
            return;
          }
          recordSeen("gRPC response", toJsonString(output, res as Message));
          resolve(res as O);
        });
      });
    },
    close: () => client.close(),
  };
}

export type Protocol = "connect" | "grpc" | "grpc-web";

/** A connect-es client over the given protocol, with the API key header set; `format` "json" is the protocol's JSON codec. */
export function connectClient<S extends DescService>(baseUrl: string, service: S, key: string, protocol: Protocol = "connect", format: "binary" | "json" = "binary"): Client<S> {
  const options = {
    baseUrl,
    httpVersion: protocol === "grpc" ? ("2" as const) : ("1.1" as const),
    useBinaryFormat: format === "binary",
    interceptors: [
      (next: Parameters<import("@connectrpc/connect").Interceptor>[0]) =>
        async (req: Parameters<Parameters<import("@connectrpc/connect").Interceptor>[0]>[0]) => {
          req.header.set("x-api-key", key);
          try {
            const res = await next(req);
            recordSeen("Connect response headers", JSON.stringify([...res.header]));
            if (!res.stream) recordSeen("Connect response", toJsonString(req.method.output, res.message));
            return res;
          } catch (err) {
            recordError(err);
            throw err;
          }
        },
    ],
  };
  const transport =
    protocol === "grpc" ? createGrpcTransport(options) : protocol === "grpc-web" ? createGrpcWebTransport(options) : createConnectTransport(options);
  return createClient(service, transport);
}
