/**
 * Process entry. With no upstream configured it starts a local Anvil node
 * and a development key, and prints how to call nodegate.
 */
import { randomBytes } from "node:crypto";
import { createApp } from "./app.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { type AnvilNode, startAnvil } from "./embedded/anvil.js";
import { API_KEY_HEADER } from "./grpc/typed-services.js";
import { createLogger } from "./log.js";
import { redactUrl } from "./upstream/upstream.js";

function banner(config: Config, host: string, port: number, key: string, generatedKey: boolean, anvil: AnvilNode | undefined): string {
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const http = `http://${shown}:${port}`;
  const upstream = anvil ? `embedded Anvil at ${config.embeddedTransport === "ws" ? anvil.wsUrl : anvil.url}` : redactUrl(config.networks[0]?.upstreams[0]?.url ?? "");
  return [
    "",
    "nodegate is running",
    `  upstream:          ${upstream}`,
    `  API key:           ${key}${generatedKey ? "   (development key, generated at start; set NODEGATE_API_KEYS to choose keys)" : ""}`,
    `  JSON-RPC (HTTP):   ${http}/v3/${key}`,
    `  JSON-RPC (WS):     ws://${shown}:${port}/ws/v3/${key}`,
    ...config.networks.filter((n) => n.name !== config.defaultNetwork).map((n) => `  JSON-RPC ${`${n.name}:`.padEnd(10)}${http}/${n.name}/v3/${key}`),
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
  let anvil: AnvilNode | undefined;
  if (config.embeddedAnvil) {
    anvil = await startAnvil();
    const eth = config.networks.find((n) => n.name === config.defaultNetwork);
    if (eth) eth.upstreams = [{ label: "anvil", url: config.embeddedTransport === "ws" ? anvil.wsUrl : anvil.url }];
  }
  const generatedKey = config.keys === undefined;
  // The development key is on the growth plan so partner failover can be tried.
  const keys = config.keys ?? [{ key: randomBytes(16).toString("hex"), plan: "growth" as const }];
  const { server } = createApp(config, log, keys);
  const address = await server.listen(config.port, config.host);
  process.stdout.write(banner(config, config.host, address.port, (keys[0] as { key: string }).key, generatedKey, anvil));

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
}

main().catch((err: unknown) => {
  process.stderr.write(`nodegate: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
