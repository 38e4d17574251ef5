/**
 * Builds a running nodegate from a Config: upstream clients, networks, the
 * method table, keys, the gateway and the server. Used by main and by tests.
 */
import type { Logger } from "pino";
import { ApiKeyStore } from "./auth/api-keys.js";
import { type Config, DEFAULT_WEBSOCKET } from "./config.js";
import { Gateway } from "./gateway.js";
import { createMethodTable } from "./methods/default-table.js";
import { createNodegateServer, type NodegateServer } from "./server.js";
import { createUpstream } from "./upstream/create-upstream.js";
import { Network } from "./upstream/network.js";

export interface App {
  gateway: Gateway;
  server: NodegateServer;
}

export function createApp(config: Config, log: Logger, apiKeys: readonly string[]): App {
  const websocket = { ...DEFAULT_WEBSOCKET, ...config.websocket };
  const networks = config.networks.map(
    (n) =>
      new Network({
        name: n.name,
        family: n.family,
        timeoutMs: config.upstreamTimeoutMs,
        upstreams: n.upstreams.map((u) => createUpstream(u.url, `${n.name}/${u.label}`, websocket, log)),
      }),
  );
  const gateway = new Gateway({
    table: createMethodTable(),
    networks,
    defaultNetwork: config.defaultNetwork,
    keys: new ApiKeyStore(apiKeys),
    limits: config.limits,
    log,
  });
  return { gateway, server: createNodegateServer(gateway, { wsPingIntervalMs: websocket.pingIntervalMs }) };
}
