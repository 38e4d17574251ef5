/**
 * The one method table both front doors use. Each entry names an RPC; its
 * JSON-RPC method, params codec and result codec are derived from the RPC's
 * descriptor and annotations, with per-param rules where a method needs them.
 */
import { getOption, type DescMethod, type DescService, type Message } from "@bufbuild/protobuf";
import { method as methodOption } from "../../gen/nodegate/jsonrpc/v1/options_pb.js";
import type { CodecRegistry } from "../codec/message-codec.js";
import { ParamsCodec, type ParamRules, type ParamStyle } from "./params-codec.js";
import { ResultCodec } from "./result-codec.js";

export type ChainFamily = "eth" | "starknet";

/** What a method definition says; everything else is derived. */
export interface MethodEntry {
  rpc: DescMethod;
  /** Rules per request field (by proto field name). */
  params?: Readonly<Record<string, ParamRules>>;
  /** Positional by default; the Starknet method is sent named (and accepts both). */
  paramStyle?: ParamStyle;
  /** Safe to retry or send to another upstream. Every read is. */
  idempotent?: boolean;
  /** The contract addresses a call names, for the contract-address allowlist. */
  addresses?: (request: never) => Uint8Array[];
}

/** A compiled method, ready for both front doors. */
export interface MethodSpec {
  readonly jsonrpcMethod: string;
  readonly family: ChainFamily;
  readonly service: DescService;
  readonly rpc: DescMethod;
  readonly params: ParamsCodec;
  readonly result: ResultCodec;
  readonly idempotent: boolean;
  readonly addresses: ((request: Message) => Uint8Array[]) | undefined;
}

export class MethodTable {
  readonly #byJsonRpc = new Map<string, MethodSpec>();
  readonly #byRpc = new Map<DescMethod, MethodSpec>();
  /** The codecs the table was compiled with. */
  readonly registry: CodecRegistry;

  constructor(registry: CodecRegistry, entries: readonly MethodEntry[]) {
    this.registry = registry;
    for (const entry of entries) {
      const rpc = entry.rpc;
      const jsonrpcMethod = getOption(rpc, methodOption);
      if (!jsonrpcMethod) throw new Error(`${rpc.parent.typeName}.${rpc.name} has no (nodegate.jsonrpc.v1.method) option`);
      if (this.#byJsonRpc.has(jsonrpcMethod)) throw new Error(`${jsonrpcMethod} is in the method table twice`);
      const spec: MethodSpec = {
        jsonrpcMethod,
        family: rpc.parent.typeName.startsWith("nodegate.starknet.") ? "starknet" : "eth",
        service: rpc.parent,
        rpc,
        params: new ParamsCodec(registry, rpc.input, entry.params ?? {}, entry.paramStyle ?? "positional"),
        result: new ResultCodec(registry, rpc.output),
        idempotent: entry.idempotent ?? true,
        addresses: entry.addresses as ((request: Message) => Uint8Array[]) | undefined,
      };
      this.#byJsonRpc.set(jsonrpcMethod, spec);
      this.#byRpc.set(rpc, spec);
    }
  }

  byJsonRpc(method: string): MethodSpec | undefined {
    return this.#byJsonRpc.get(method);
  }

  byRpc(rpc: DescMethod): MethodSpec | undefined {
    return this.#byRpc.get(rpc);
  }

  /** The services that have at least one method in the table. */
  services(): DescService[] {
    return [...new Set([...this.#byRpc.values()].map((m) => m.service))];
  }

  all(): MethodSpec[] {
    return [...this.#byJsonRpc.values()];
  }
}
