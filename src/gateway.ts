/**
 * What both front doors share: the method table, the networks, the accepted
 * keys and the limits. Front doors parse their protocol and then ask this.
 */
import type { Logger } from "pino";
import type { ApiKey, ApiKeyStore } from "./auth/api-keys.js";
import { GatewayError } from "./errors/gateway-error.js";
import { Code } from "@connectrpc/connect";
import type { MethodTable } from "./methods/method-table.js";
import type { Network } from "./upstream/network.js";

export interface Limits {
  /** Largest request body accepted on the native path, in bytes. */
  maxBodyBytes: number;
  /** Most requests in one JSON-RPC batch. */
  maxBatchSize: number;
  /** Largest message on the native WebSocket path, in bytes; default maxBodyBytes. */
  maxWsMessageBytes?: number;
}

export interface GatewayOptions {
  table: MethodTable;
  networks: readonly Network[];
  /** The network used when a request names none. */
  defaultNetwork: string;
  keys: ApiKeyStore;
  limits: Limits;
  log: Logger;
}

/** The provider's texts for key failures, so migrating callers see what they know. */
export const AUTH_MESSAGES = {
  missing: "project id required in the url",
  unknown: "invalid project id",
} as const;

export class Gateway {
  readonly table: MethodTable;
  readonly keys: ApiKeyStore;
  readonly limits: Limits;
  readonly log: Logger;
  readonly defaultNetwork: string;
  readonly #networks: Map<string, Network>;

  constructor(options: GatewayOptions) {
    this.table = options.table;
    this.keys = options.keys;
    this.limits = options.limits;
    this.log = options.log;
    this.defaultNetwork = options.defaultNetwork;
    this.#networks = new Map(options.networks.map((n) => [n.name, n]));
    if (!this.#networks.has(options.defaultNetwork)) throw new Error(`default network ${options.defaultNetwork} is not configured`);
  }

  /** The named network (the default when unnamed); a GatewayError when unknown. */
  network(name: string | undefined): Network {
    const network = this.#networks.get(name ?? this.defaultNetwork);
    if (network === undefined) {
      throw new GatewayError({ code: -32601, message: `unknown network ${JSON.stringify(name)}`, grpcCode: Code.NotFound, httpStatus: 404 });
    }
    return network;
  }

  networks(): Network[] {
    return [...this.#networks.values()];
  }

  /** The caller's key, or a GatewayError with the provider's 401 text. */
  authenticate(candidate: string | undefined): ApiKey {
    if (candidate === undefined || candidate === "") {
      throw new GatewayError({ code: -32600, message: AUTH_MESSAGES.missing, grpcCode: Code.Unauthenticated, httpStatus: 401 });
    }
    const key = this.keys.lookup(candidate);
    if (key === undefined) {
      throw new GatewayError({ code: -32600, message: AUTH_MESSAGES.unknown, grpcCode: Code.Unauthenticated, httpStatus: 401 });
    }
    return key;
  }

  async close(): Promise<void> {
    await Promise.all(this.networks().map((n) => n.close()));
  }
}
