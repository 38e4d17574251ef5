/**
 * nodegate's front doors as a spec test meets them, each recording its use
 * for specRule: HTTP (POST /v3/<KEY>, fetch), WebSocket (/ws/v3/<KEY>, ws)
 * and typed (every call made through both grpc-js and connect-es, which must
 * agree).
 */
import {
  create,
  type DescMessage,
  type DescMethod,
  type DescService,
  equals,
  type Message,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { Code, type ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { type GrpcJsClient, grpcJsClient } from "../../support/grpc-clients.js";
import { connectErrorOf, grpcErrorOf, jsonRpcErrorOfConnect, jsonRpcErrorOfGrpc } from "../../support/grpc-status.js";
import { openWsSession, type WsSession } from "../../support/ws-session.js";
import { noteDoor } from "./spec-rule.js";

/** A JSON-RPC response object as received. */
export interface JsonRpcReply {
  jsonrpc?: unknown;
  id?: unknown;
  // biome-ignore lint: results are whatever JSON the method returns
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

export interface HttpReply {
  status: number;
  headers: Headers;
  /** The body exactly as received. */
  text: string;
  /** The body parsed, or undefined when it is not JSON. */
  // biome-ignore lint: any JSON
  json: any;
}

function request(method: string, params: unknown, id: unknown): string {
  return JSON.stringify(params === undefined ? { jsonrpc: "2.0", id, method } : { jsonrpc: "2.0", id, method, params });
}

function resultOf(method: string, reply: JsonRpcReply): unknown {
  if (reply.error !== undefined) throw new Error(`${method} failed: ${reply.error.code} ${reply.error.message}`);
  if (!("result" in reply)) throw new Error(`${method}: no result in ${JSON.stringify(reply).slice(0, 200)}`);
  return reply.result;
}

/** The native path over HTTP. */
export class HttpDoor {
  constructor(readonly url: string) {}

  /** POSTs a body (a string goes as is) and reads status, headers and text. */
  async post(body: unknown, init: { url?: string; headers?: Record<string, string>; method?: string } = {}): Promise<HttpReply> {
    noteDoor("http");
    const res = await fetch(init.url ?? this.url, {
      method: init.method ?? "POST",
      headers: { "content-type": "application/json", ...init.headers },
      ...(init.method === "GET" ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = text === "" ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  /** One call; the reply object (result or error). Fails unless the status is 200. */
  async call(method: string, params?: unknown, id: unknown = 1): Promise<JsonRpcReply> {
    const reply = await this.post(request(method, params, id));
    if (reply.status !== 200) throw new Error(`${method}: HTTP ${reply.status}: ${reply.text.slice(0, 200)}`);
    return reply.json as JsonRpcReply;
  }

  /** One call's result; fails when it is an error. */
  // biome-ignore lint: any JSON
  async result(method: string, params?: unknown): Promise<any> {
    return resultOf(method, await this.call(method, params));
  }
}

/** The native path over WebSocket: one connection, one request in flight at a time. */
export class WsDoor {
  #session: Promise<WsSession> | undefined;
  #turn: Promise<unknown> = Promise.resolve();

  constructor(readonly url: string) {}

  /** Sends one text message and resolves with the next message the server sends. */
  send(text: string): Promise<string> {
    noteDoor("ws");
    const next = this.#turn.then(async () => {
      this.#session ??= openWsSession(this.url);
      const session = await this.#session;
      session.send(text);
      return session.next();
    });
    this.#turn = next.catch(() => undefined);
    return next;
  }

  async call(method: string, params?: unknown, id: unknown = 1): Promise<JsonRpcReply> {
    return JSON.parse(await this.send(request(method, params, id))) as JsonRpcReply;
  }

  // biome-ignore lint: any JSON
  async result(method: string, params?: unknown): Promise<any> {
    return resultOf(method, await this.call(method, params));
  }

  async close(): Promise<void> {
    if (this.#session !== undefined) await (await this.#session).close();
  }
}

/** How a typed call failed, the same on both clients. */
export interface TypedFailure {
  code: Code;
  /** The JsonRpcError detail, when the status carries one. */
  error: { code: number; message: string; data?: string } | undefined;
  connectError: ConnectError;
}

export interface TypedTarget {
  address: string;
  url: string;
}

/** The typed path: each call goes through grpc-js (gRPC, binary) and connect-es (Connect protocol, JSON). */
export class TypedDoor {
  readonly #grpc: GrpcJsClient;
  readonly #connect: Record<string, (request: Message, options: { headers: Record<string, string> }) => Promise<Message>>;
  readonly #headers: Record<string, string>;

  constructor(target: TypedTarget, service: DescService, headers: Record<string, string>) {
    this.#grpc = grpcJsClient(target.address, service);
    this.#connect = createClient(service, createConnectTransport({ baseUrl: target.url, httpVersion: "1.1" })) as never;
    this.#headers = headers;
  }

  #viaConnect(rpc: DescMethod, request: Message): Promise<Message> {
    const fn = this.#connect[rpc.localName];
    if (fn === undefined) throw new Error(`no method ${rpc.localName}`);
    return fn(request, { headers: this.#headers });
  }

  /** Both clients' response to the request (a message or its init shape); they must be equal. */
  async call<I extends DescMessage, O extends DescMessage>(
    rpc: DescMethod & { input: I; output: O },
    init: MessageInitShape<I>,
  ): Promise<MessageShape<O>> {
    noteDoor("typed");
    const request = create(rpc.input, init);
    const [viaGrpc, viaConnect] = await Promise.all([
      this.#grpc.call<MessageShape<O>>(rpc.localName, request, this.#headers),
      this.#viaConnect(rpc, request),
    ]);
    if (!equals(rpc.output, viaGrpc, viaConnect as MessageShape<O>)) throw new Error(`grpc-js and connect-es got different ${rpc.output.typeName}`);
    return viaGrpc;
  }

  /** How the call fails on both clients; they must agree on the code and the JsonRpcError. */
  async fail<I extends DescMessage>(rpc: DescMethod & { input: I }, init: MessageInitShape<I>): Promise<TypedFailure> {
    noteDoor("typed");
    const request = create(rpc.input, init);
    const [grpcError, connectError] = await Promise.all([
      grpcErrorOf(this.#grpc.call(rpc.localName, request, this.#headers)),
      connectErrorOf(this.#viaConnect(rpc, request)),
    ]);
    // grpc-js and Connect number status codes the same way (the gRPC codes).
    if (Number(grpcError.code) !== Number(connectError.code)) {
      throw new Error(`grpc-js got status ${grpcError.code}, connect-es ${connectError.code}`);
    }
    let error: TypedFailure["error"];
    if (connectError.details.length > 0) {
      const viaConnect = jsonRpcErrorOfConnect(connectError);
      const viaGrpc = jsonRpcErrorOfGrpc(grpcError);
      if (viaGrpc.code !== viaConnect.code || viaGrpc.message !== viaConnect.message || viaGrpc.data !== viaConnect.data) {
        throw new Error("grpc-js and connect-es got different JsonRpcError details");
      }
      error = { code: Number(viaConnect.code), message: viaConnect.message, ...(viaConnect.data === undefined ? {} : { data: viaConnect.data }) };
    }
    return { code: connectError.code as Code, error, connectError };
  }

  close(): void {
    this.#grpc.close();
  }
}

export { Code };

/** Attempts a WebSocket upgrade; resolves with the open session, or with the HTTP status it was refused with. */
export async function wsUpgrade(url: string, headers: Record<string, string> = {}): Promise<{ session?: WsSession; refusedWith?: number }> {
  noteDoor("ws");
  try {
    return { session: await openWsSession(url, { headers }) };
  } catch (err) {
    const m = /upgrade refused with HTTP (\d+)/.exec((err as Error).message);
    if (m === null) throw err;
    return { refusedWith: Number(m[1]) };
  }
}
