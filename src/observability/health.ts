/**
 * Readiness from upstream state: a network is ready when one of its
 * upstreams answered recently; when none did, a cheap probe call decides.
 * No timers run in the background: probes happen when someone asks.
 */
import { setMaxListeners } from "node:events";
import type { Gateway } from "../gateway.js";
import type { Network } from "../upstream/network.js";
import { CHAIN_ID_METHOD } from "../upstream/partner-chains.js";
import { familyWithArticle } from "../methods/method-family.js";

export interface HealthOptions {
  /** An answer this recent means ready without probing. Default 30 s. */
  recentMs?: number;
  /** Deadline of a probe call. Default 2 s. */
  probeTimeoutMs?: number;
}


export class HealthMonitor {
  readonly #gateway: Gateway;
  readonly #recentMs: number;
  readonly #probeTimeoutMs: number;
  readonly #probes = new Map<string, Promise<boolean>>();
  readonly #otherServices: readonly string[];
  readonly #draining = new AbortController();
  /**
   * Networks a probe found answering. Until one has, a recent answer does not
   * make a network ready without a probe: the probe is what finds a Starknet
   * network pointed at an Ethereum node (which answers every call, -32601),
   * to warn about it.
   */
  readonly #probed = new Set<string>();
  /** Networks whose node answered the chainId probe -32601 (method not found): warned once. */
  readonly #otherFamily = new Set<string>();

  /** `otherServices`: served services not tied to one chain family; they follow the default network. */
  constructor(gateway: Gateway, otherServices: readonly string[], options: HealthOptions = {}) {
    // Every Watch stream listens for the drain; many at once is normal, not a leak.
    setMaxListeners(0, this.#draining.signal);
    this.#gateway = gateway;
    this.#otherServices = otherServices;
    this.#recentMs = options.recentMs ?? 30_000;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? 2000;
  }

  /** Aborted when the server starts draining: watchers report NOT_SERVING and end their streams. */
  get draining(): AbortSignal {
    return this.#draining.signal;
  }

  /** The server is shutting down. */
  drain(): void {
    this.#draining.abort();
  }

  /**
   * Whether the network answered recently, and not failed since, probing it
   * (once, however many ask) if not: a node that stops answering is seen at
   * its first failed call, not a recency window later (a gRPC client's
   * health checking kept sending to a dead node for 30 s).
   */
  networkReady(network: Network): Promise<boolean> {
    const answeredRecently = (): boolean => performance.now() - network.lastAnswerAt < this.#recentMs && network.lastAnswerAt >= network.lastOutageAt;
    if (answeredRecently() && this.#probed.has(network.name)) return Promise.resolve(true);
    let probe = this.#probes.get(network.name);
    if (probe === undefined) {
      const method = CHAIN_ID_METHOD[network.family];
      probe = network
        .answersAny(method, this.#probeTimeoutMs)
        .then(({ answered, methodUnknownAt }) => {
          if (answered) this.#probed.add(network.name);
          // Still ready: the node is up, and a fixture or a node short of methods answers as well as it can.
          if (methodUnknownAt !== undefined && !this.#otherFamily.has(network.name)) {
            this.#otherFamily.add(network.name);
            this.#gateway.log.warn(
              { network: network.name, upstream: methodUnknownAt },
              `the upstream answers ${method} with -32601 (method not found): is it ${familyWithArticle(network.family)} node? Calls to this network may all get method not found`,
            );
          }
          return answered;
        })
        .catch(() => false)
        .finally(() => this.#probes.delete(network.name));
      this.#probes.set(network.name, probe);
    }
    // A probe unanswered within its short deadline, from a node that answers calls more slowly (and has not failed
    // since), does not make the network unready (found from outside: a node answering every call in 3-7 s was never
    // ready): a node that is down fails calls, or nodegate's own chain id question (Network), and is seen so.
    return probe.then((answered) => answered || answeredRecently());
  }

  /** Calls `listener` whenever an upstream of any network is seen down; returns the unsubscribe. */
  onOutage(listener: () => void): () => void {
    const unsubscribes = this.#gateway.networks().map((n) => n.onOutage(listener));
    return () => {
      for (const unsubscribe of unsubscribes) unsubscribe();
    };
  }

  /** Readiness of every network. */
  async networks(): Promise<Record<string, boolean>> {
    const nets = this.#gateway.networks();
    const states = await Promise.all(nets.map((n) => this.networkReady(n)));
    return Object.fromEntries(nets.map((n, i) => [n.name, states[i] as boolean]));
  }

  /**
   * Status of a gRPC service: SERVING when a network of its chain family is
   * ready ("" is the whole server: every network ready); undefined when the
   * service is unknown.
   */
  async serviceStatus(service: string): Promise<boolean | undefined> {
    if (service === "") return Object.values(await this.networks()).every(Boolean);
    const spec = this.#gateway.table.all().find((m) => m.service.typeName === service);
    const nets = this.#gateway.networks();
    if (spec === undefined) {
      // Services not tied to one family (generic JSON-RPC, health, reflection) follow the default network.
      if (!this.#otherServices.includes(service)) return undefined;
      return this.networkReady(this.#gateway.network(undefined));
    }
    const family = nets.filter((n) => n.family === spec.family);
    if (family.length === 0) return false;
    const states = await Promise.all(family.map((n) => this.networkReady(n)));
    return states.some(Boolean);
  }
}
