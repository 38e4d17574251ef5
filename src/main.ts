/**
 * Process entry. With no upstream configured it starts a local Anvil node
 * and a development key, and prints how to call nodegate.
 */
import cluster from "node:cluster";
import { randomBytes } from "node:crypto";
import { createApp } from "./app.js";
import { forkWorkers } from "./cluster.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { type AnvilNode, startAnvil } from "./embedded/anvil.js";
import { API_KEY_HEADER } from "./grpc/typed-services.js";
import { createLogger } from "./log.js";
import { redactUrl } from "./upstream/upstream.js";

function banner(config: Config, host: string, port: number, key: string, generatedKey: boolean, anvil: AnvilNode | undefined): string {
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const http = `http://${shown}:${port}`;
  const upstream = anvil ? `embedded Anvil at ${anvil.url}` : redactUrl(config.networks[0]?.upstreams[0]?.url ?? "");
  return [
    "",
    "nodegate is running",
    `  upstream:          ${upstream}`,
    `  API key:           ${key}${generatedKey ? "   (development key, generated at start; set NODEGATE_API_KEYS to choose keys)" : ""}`,
    `  JSON-RPC (HTTP):   ${http}/v3/${key}`,
    `  gRPC / Connect:    ${shown}:${port}  (plaintext HTTP/2; key in the "${API_KEY_HEADER}" header)`,
    "",
    "Try the native JSON-RPC path:",
    `  curl -s ${http}/v3/${key} -H 'content-type: application/json' \\`,
    `    -d '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}'`,
    "",
    "Try the typed gRPC path (buf comes with npm ci):",
    `  npx buf curl --schema proto --protocol grpc --http2-prior-knowledge \\`,
    `    -H '${API_KEY_HEADER}: ${key}' -d '{"block":{"tag":"BLOCK_TAG_LATEST"}}' \\`,
    `    ${http}/nodegate.eth.v1.EthService/GetBlockByNumber`,
    "",
  ].join("\n");
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`nodegate: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  if ((config.workers ?? 1) > 1 && cluster.isPrimary) {
    await runPrimary(config);
    return;
  }
  let anvil: AnvilNode | undefined;
  if (config.embeddedAnvil) {
    anvil = await startAnvil();
    const eth = config.networks.find((n) => n.name === config.defaultNetwork);
    if (eth) eth.upstreams = [{ label: "anvil", url: anvil.url }];
  }
  const generatedKey = config.keys === undefined;
  // The development key is on the growth plan so partner failover can be tried.
  const keys = config.keys ?? [{ key: randomBytes(16).toString("hex"), plan: "growth" as const }];
  const { server } = createApp(config, log, keys);
  const address = await server.listen(config.port, config.host);
  // Workers share the primary's port; the primary prints the banner.
  if (cluster.isPrimary) process.stdout.write(banner(config, config.host, address.port, (keys[0] as { key: string }).key, generatedKey, anvil));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    await server.close();
    await anvil?.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
  // A worker whose primary is gone has no one to hand it connections.
  if (cluster.isWorker) process.on("disconnect", () => void stop("disconnect"));
}

/**
 * NODEGATE_WORKERS > 1: this process prepares what the workers must share
 * (the embedded Anvil, a generated development key), forks the workers onto
 * one port, and stops them on SIGINT/SIGTERM.
 */
async function runPrimary(config: Config): Promise<void> {
  const workers = config.workers ?? 1;
  const anvil = config.embeddedAnvil ? await startAnvil() : undefined;
  const generatedKey = config.keys === undefined;
  const key = generatedKey ? randomBytes(16).toString("hex") : (config.keys?.[0] as { key: string }).key;
  const env: Record<string, string> = {};
  if (anvil !== undefined) env.NODEGATE_UPSTREAM_URL = anvil.url;
  if (generatedKey) env.NODEGATE_API_KEYS = `${key}:growth`;
  const pool = await forkWorkers(workers, env);
  process.stdout.write(banner(config, config.host, pool.address.port, key, generatedKey, anvil));
  process.stdout.write(`  workers:           ${workers} processes on this port (caches and rate-limit counters are per worker)\n\n`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await pool.stop();
    await anvil?.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop());
  process.on("SIGTERM", () => void stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`nodegate: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
