/**
 * The README's generated tables (methods, JSON-RPC <-> gRPC errors), rendered
 * from the method table and the code map so the README cannot drift from
 * the code. `npm run docs:tables` rewrites them; a test checks them.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { JSONRPC_TO_GRPC, GRPC_TO_JSONRPC, SERVER_ERROR_RULES } from "../src/errors/code-map.js";
import { createMethodTable } from "../src/methods/default-table.js";

const README = join(import.meta.dirname, "../README.md");

function grpcName(code: Code): string {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

export function renderTables(): Record<string, string> {
  const methods = [
    "| JSON-RPC method | Typed RPC | Params (positional order; named for Starknet) |",
    "|---|---|---|",
    ...createMethodTable()
      .all()
      .map((s) => `| \`${s.jsonrpcMethod}\` | \`${s.service.typeName}/${s.rpc.name}\` | ${s.params.names.map((n) => `\`${n}\``).join(", ") || "none"} |`),
  ].join("\n");
  const errors = [
    "| JSON-RPC code | Meaning | gRPC status |",
    "|---|---|---|",
    ...JSONRPC_TO_GRPC.map((r) => `| \`${r.jsonrpc}\` | ${r.meaning} | \`${grpcName(r.grpc)}\` |`),
    "",
    "geth, and so most providers, answer most failures with `-32000` and say which in the message, as reth and Anvil do under `-32003` and Nethermind under `-32010`. For typed callers the message decides the status (first match; case does not matter; under `-32000`, geth's call wrappers, `err: ` before an `eth_call` failure and `failed with N gas: ` before an `eth_estimateGas` one, and Erigon's pool result before a refused transaction's reason, `FEE_TOO_LOW: ` say, are read past, and a reason no row reads after Erigon's `ALREADY_EXISTS`, `FEE_TOO_LOW`, `STALE` or `INVALID` takes that result's status; the `JsonRpcError` detail keeps the node's code and message, and the JSON-RPC door passes the error on unchanged); any other message is read by its code (`-32000` is `INTERNAL`). A row that names its codes reads only those: Anvil's `-32603 EVM error <reason>` for a call the EVM halted, and Besu's own codes for transaction refusals, which EIP-1474's table reads otherwise:",
    "",
    "| Message starts with (codes `-32000`, `-32003`, `-32010` unless named) | Meaning | gRPC status |",
    "|---|---|---|",
    ...SERVER_ERROR_RULES.map((r) => `| ${r.codes === undefined ? "" : `${r.codes.length > 1 ? "codes" : "code"} ${r.codes.map((c) => `\`${c}\``).join(", ")}: `}${r.prefixes.map((p) => `\`${p.trimEnd()}\``).join(", ")} | ${r.meaning} | \`${grpcName(r.grpc)}\` |`),
    "",
    "A status without a `JsonRpcError` detail (a foreign one, or a transport-level refusal nodegate shares with Connect: a passed deadline, a message over the size limit, a body that does not decode) maps back by its code:",
    "",
    "| gRPC status | JSON-RPC code |",
    "|---|---|",
    ...[...GRPC_TO_JSONRPC].map(([grpc, jsonrpc]) => `| \`${grpcName(grpc)}\` | \`${jsonrpc}\` |`),
  ].join("\n");
  return { methods, errors };
}

export function sections(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/<!-- generated:(\w+) -->\n([\s\S]*?)\n<!-- \/generated:\1 -->/g)) out[m[1] as string] = m[2] as string;
  return out;
}

if (process.argv[1] === import.meta.filename) {
  let text = readFileSync(README, "utf8");
  for (const [name, table] of Object.entries(renderTables())) {
    text = text.replace(new RegExp(`(<!-- generated:${name} -->\\n)[\\s\\S]*?(\\n<!-- /generated:${name} -->)`), `$1${table}$2`);
  }
  writeFileSync(README, text);
  process.stdout.write("README tables updated\n");
}
