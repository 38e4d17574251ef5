/**
 * A named network (ethereum, starknet, ...): its chain family and the
 * upstreams that serve it. Front doors ask a network, never an upstream.
 */
import type { ChainFamily } from "../methods/method-table.js";
import type { UpstreamResult } from "./reply.js";
import type { Upstream } from "./upstream.js";

export interface NetworkOptions {
  name: string;
  family: ChainFamily;
  /** The first is the primary. */
  upstreams: Upstream[];
  /** Per-request deadline for upstream calls. */
  timeoutMs: number;
}

export interface NetworkCallOptions {
  signal?: AbortSignal | undefined;
  /** Overrides the network's deadline (eth_getLogs has its own). */
  timeoutMs?: number;
  /** Passed to the upstream, which may resend an idempotent call after a dropped connection. */
  idempotent?: boolean | undefined;
}

export class Network {
  readonly name: string;
  readonly family: ChainFamily;
  readonly #upstreams: Upstream[];
  readonly #timeoutMs: number;

  constructor(options: NetworkOptions) {
    if (options.upstreams.length === 0) throw new Error(`network ${options.name} has no upstream`);
    this.name = options.name;
    this.family = options.family;
    this.#upstreams = options.upstreams;
    this.#timeoutMs = options.timeoutMs;
  }

  get primary(): Upstream {
    return this.#upstreams[0] as Upstream;
  }

  call(method: string, paramsText: string, options: NetworkCallOptions = {}): Promise<UpstreamResult> {
    return this.primary.call(method, paramsText, {
      signal: options.signal,
      timeoutMs: options.timeoutMs ?? this.#timeoutMs,
      idempotent: options.idempotent,
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.#upstreams.map((u) => u.close()));
  }
}
