/**
 * The subscription hubs of one gateway, one per network, made when a
 * network gets its first subscriber.
 */
import type { Logger } from "pino";
import type { Limits, SubscriptionSettings } from "../config/config.js";
import type { Metrics } from "../observability/metrics.js";
import type { Network } from "../upstream/network.js";
import { SubscriptionHub } from "./hub.js";

export class SubscriptionHubs {
  readonly settings: SubscriptionSettings;
  readonly #limits: Limits;
  readonly #log: Logger;
  readonly #metrics: Metrics | undefined;
  readonly #hubs = new Map<Network, SubscriptionHub>();

  constructor(settings: SubscriptionSettings, limits: Limits, log: Logger, metrics?: Metrics) {
    this.settings = settings;
    this.#limits = limits;
    this.#log = log;
    this.#metrics = metrics;
  }

  hub(network: Network): SubscriptionHub {
    let hub = this.#hubs.get(network);
    if (hub === undefined) {
      hub = new SubscriptionHub(network, this.settings, this.#limits, this.#log, this.#metrics);
      this.#hubs.set(network, hub);
    }
    return hub;
  }

  /** Ends every subscriber and stops every feed (shutdown). */
  async close(): Promise<void> {
    const hubs = [...this.#hubs.values()];
    this.#hubs.clear();
    await Promise.all(hubs.map((hub) => hub.close()));
  }
}
