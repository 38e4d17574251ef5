/**
 * The typed front door through each real client, behind one call signature,
 * so a test can run the same request and assertions over all of them.
 */
import type { DescMethod, DescService, Message } from "@bufbuild/protobuf";
import { connectClient, grpcJsClient, type Protocol } from "./grpc-clients.js";

export type TypedClientName = "grpc-js" | `connect-es/${Protocol}`;

export interface TypedCaller {
  readonly name: TypedClientName;
  call<O extends Message>(rpc: DescMethod, request: Message): Promise<O>;
  close(): void;
}

export interface TypedTarget {
  /** host:port */
  address: string;
  /** http://host:port */
  url: string;
}

/** A caller over @grpc/grpc-js (HTTP/2, binary protobuf), sending `key` as x-api-key when given. */
export function grpcJsCaller(target: TypedTarget, service: DescService, key?: string): TypedCaller {
  const client = grpcJsClient(target.address, service);
  const metadata: Record<string, string> = key === undefined ? {} : { "x-api-key": key };
  return {
    name: "grpc-js",
    call: <O extends Message>(rpc: DescMethod, request: Message) => client.call<O>(rpc.localName, request, metadata),
    close: () => client.close(),
  };
}

/** A caller over connect-es with the given protocol (the Connect protocol by default). */
export function connectCaller(target: TypedTarget, service: DescService, key: string, protocol: Protocol = "connect"): TypedCaller {
  const client = connectClient(target.url, service, key, protocol) as unknown as Record<string, (req: Message) => Promise<Message>>;
  return {
    name: `connect-es/${protocol}`,
    call: async <O extends Message>(rpc: DescMethod, request: Message) => {
      const fn = client[rpc.localName];
      if (fn === undefined) throw new Error(`no method ${rpc.localName}`);
      return (await fn(request)) as O;
    },
    close: () => {},
  };
}
