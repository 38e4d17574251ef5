/**
 * What nodegate prints when it is up: where each door listens, the key to
 * use, and two commands to try, spelled for TLS when the port speaks it.
 */
import type { Config } from "./config/config.js";
import type { AnvilNode } from "./embedded/anvil.js";
import { API_KEY_HEADER } from "./grpc/typed-services.js";
import { redactUrl } from "./upstream/upstream.js";

/** The two commands to try, in the default network's family (found from outside: a Starknet default got Ethereum's, which failed). */
const EXAMPLES = {
  eth: {
    native: '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}',
    typed: '{"block":{"tag":"BLOCK_TAG_LATEST"}}',
    rpc: "nodegate.eth.v1.EthService/GetBlockByNumber",
  },
  starknet: {
    native: '{"jsonrpc":"2.0","id":1,"method":"starknet_chainId","params":[]}',
    typed: '{"blockId":{"tag":"BLOCK_TAG_LATEST"},"index":"0"}',
    rpc: "nodegate.starknet.v1.StarknetService/GetTransactionByBlockIdAndIndex",
  },
} as const;

export function banner(config: Config, host: string, port: number, key: string, generatedKey: boolean, anvil: AnvilNode | undefined): string {
  const bound = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const shown = bound.includes(":") ? `[${bound}]` : bound;
  // With TLS the same port speaks HTTPS (HTTP/2 by ALPN, HTTP/1.1 for WebSocket upgrades).
  const secure = config.tls !== undefined;
  const http = `${secure ? "https" : "http"}://${shown}:${port}`;
  const example = EXAMPLES[config.networks.find((n) => n.name === config.defaultNetwork)?.family ?? "eth"];
  const upstream = anvil ? `embedded Anvil at ${config.embeddedTransport === "ws" ? anvil.wsUrl : anvil.url}` : redactUrl(config.networks[0]?.upstreams[0]?.url ?? "");
  return [
    "",
    "nodegate is running",
    `  upstream:          ${upstream}`,
    `  API key:           ${key}${generatedKey ? "   (development key, generated at start; set NODEGATE_API_KEYS to choose keys)" : "   (one of your configured keys, never printed: put it in place of <KEY> below)"}`,
    `  JSON-RPC (HTTP):   ${http}/v3/${key}`,
    `  JSON-RPC (WS):     ${secure ? "wss" : "ws"}://${shown}:${port}/ws/v3/${key}`,
    ...config.networks.filter((n) => n.name !== config.defaultNetwork).map((n) => `  JSON-RPC ${`${n.name}:`.padEnd(9)} ${http}/${n.name}/v3/${key}`),
    `  gRPC / Connect:    ${shown}:${port}  (${secure ? "TLS" : "plaintext HTTP/2"}; key in the "${API_KEY_HEADER}" header)`,
    "",
    "Try the native JSON-RPC path:",
    // Quoted: a configured key is shown as <KEY>, which a shell would read as a redirection.
    `  curl -s '${http}/v3/${key}' -H 'content-type: application/json' \\`,
    `    -d '${example.native}'`,
    "",
    "Try the typed gRPC path (buf comes with npm ci):",
    `  npx buf curl --schema proto --protocol grpc${secure ? "" : " --http2-prior-knowledge"} \\`,
    `    -H '${API_KEY_HEADER}: ${key}' -d '${example.typed}' \\`,
    `    '${http}/${example.rpc}'`,
    "",
  ].join("\n");
}
