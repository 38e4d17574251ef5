/**
 * What both front doors share: the method table, the networks, access
 * control, per-method policies and limits. Front doors parse their protocol
 * and then ask this.
 */
import { Code } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { AccessControl } from "./auth/access-control.js";
import type { ApiKey } from "./auth/api-keys.js";
import { KeyQuotas } from "./auth/key-quotas.js";
import { DEFAULT_SUBSCRIPTIONS, type Limits, type PassThroughConfig, type SubscriptionSettings, WRITE_METHODS } from "./config/config.js";
import { KEY_PATTERN } from "./config/values.js";
import { GatewayError } from "./errors/gateway-error.js";
import type { InvokeContext } from "./methods/invoke.js";
import type { ChainFamily, MethodTable } from "./methods/method-table.js";
import type { MethodPolicy } from "./methods/policy.js";
import type { Metrics } from "./observability/metrics.js";
import { SubscriptionHubs } from "./subscriptions/hubs.js";
import type { Network } from "./upstream/network.js";
import type { HeldAnswers } from "./upstream/held-answers.js";
import type { CallSignal } from "./call-signal.js";

export interface GatewayOptions {
  table: MethodTable;
  networks: readonly Network[];
  /** The network used when a request names none. */
  defaultNetwork: string;
  access: AccessControl;
  policies: ReadonlyMap<string, MethodPolicy>;
  limits: Limits;
  passThrough: PassThroughConfig;
  corsOrigins: readonly string[];
  log: Logger;
  metrics: Metrics;
  /** Released by close() after the networks (shared stores' connections). */
  closers?: readonly (() => Promise<void>)[];
  /** Subscriptions and streams; defaults when unset. */
  subscriptions?: SubscriptionSettings | undefined;
  /** Answers waiting for their clients, counted in the reply budget the HTTP upstreams share (limits.maxReplyBytesInFlight). */
  heldAnswers?: HeldAnswers | undefined;
}

export class Gateway {
  readonly table: MethodTable;
  readonly access: AccessControl;
  readonly policies: ReadonlyMap<string, MethodPolicy>;
  readonly limits: Limits;
  readonly log: Logger;
  readonly defaultNetwork: string;
  readonly corsOrigins: readonly string[];
  readonly metrics: Metrics;
  /** One subscription hub per network (eth_subscribe and the typed streams). */
  readonly subscriptions: SubscriptionHubs;
  /** What each key holds open at once (connections, requests in progress, subscriptions). */
  readonly quotas: KeyQuotas;
  readonly heldAnswers: HeldAnswers | undefined;
  readonly #networks: Map<string, Network>;
  readonly #passThrough: Set<string>;
  readonly #closers: readonly (() => Promise<void>)[];

  constructor(options: GatewayOptions) {
    this.table = options.table;
    this.access = options.access;
    this.policies = options.policies;
    this.limits = options.limits;
    this.log = options.log;
    this.defaultNetwork = options.defaultNetwork;
    this.corsOrigins = options.corsOrigins;
    this.metrics = options.metrics;
    this.subscriptions = new SubscriptionHubs(options.subscriptions ?? DEFAULT_SUBSCRIPTIONS, options.limits, options.log, options.metrics);
    this.quotas = new KeyQuotas(options.limits);
    this.heldAnswers = options.heldAnswers;
    this.#networks = new Map(options.networks.map((n) => [n.name, n]));
    if (!this.#networks.has(options.defaultNetwork)) throw new Error(`default network ${options.defaultNetwork} is not configured`);
    const { methods, allowWrites } = options.passThrough;
    // Write methods listed without allowWrites are refused when the file is read; this covers configs built in code.
    this.#passThrough = new Set(allowWrites ? methods : methods.filter((m) => !WRITE_METHODS.includes(m)));
    this.#closers = options.closers ?? [];
    if (allowWrites) this.#passThrough.add("eth_sendRawTransaction");
  }

  /** Whether a network of that name is configured (a log line names only those: a path's first segment may be a key). */
  hasNetwork(name: string): boolean {
    return this.#networks.has(name);
  }

  /** The named network (the default when unnamed); a GatewayError when unknown. */
  network(name: string | undefined): Network {
    const network = this.#networks.get(name ?? this.defaultNetwork);
    if (network === undefined) {
      // -32001 (resource not found) with NOT_FOUND and 404, as the code table pairs them on both doors.
      // The name is quoted unless it could be a key: a client that put its key in the network header would find it
      // in the request log (found from outside).
      const named = name !== undefined && KEY_PATTERN.test(name) ? "" : ` ${JSON.stringify(name)}`;
      throw new GatewayError({
        code: -32001,
        message: `unknown network${named}; configured networks: ${[...this.#networks.keys()].join(", ")}`,
        grpcCode: Code.NotFound,
        httpStatus: 404,
      });
    }
    return network;
  }

  /** The network that serves a chain family: the default network if it does, else the first configured one. */
  homeNetwork(family: ChainFamily): Network | undefined {
    const fallback = this.#networks.get(this.defaultNetwork);
    if (fallback?.family === family) return fallback;
    return [...this.#networks.values()].find((n) => n.family === family);
  }

  /** The context a caller's calls run in, on either door. */
  invokeContext(key: ApiKey, network: Network, signal: CallSignal): InvokeContext {
    return { access: this.access, key, network, limits: this.limits, policies: this.policies, signal };
  }

  networks(): Network[] {
    return [...this.#networks.values()];
  }

  /** Methods outside the typed table that are forwarded verbatim. (Bound: native calls take it as it is.) */
  readonly passesThrough = (method: string): boolean => this.#passThrough.has(method);

  /** The name of the network serving a family, for advice in errors. (Bound: native calls take it as it is.) */
  readonly homeNetworkName = (family: ChainFamily): string | undefined => this.homeNetwork(family)?.name;

  /** Closes the upstream clients: calls still waiting on a node fail at once with "shutting down" (the drain deadline). */
  async closeUpstreams(): Promise<void> {
    await Promise.all(this.networks().map((n) => n.close()));
  }

  async close(): Promise<void> {
    await this.subscriptions.close();
    await Promise.all(this.networks().map((n) => n.close()));
    await Promise.all(this.#closers.map((close) => close()));
  }
}
