/**
 * A nodegate for spec tests with a client on each front door, and the
 * fixture data some rules need because Anvil cannot produce it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { EthService } from "../../../gen/nodegate/eth/v1/eth_service_pb.js";
import { StarknetService } from "../../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import { API_KEY_HEADER, NETWORK_HEADER } from "../../../src/grpc/typed-services.js";
import type { Recording } from "../../support/fixture-upstream.js";
import { type StartOptions, startNodegate, type TestNodegate } from "../../support/nodegate.js";
import { HttpDoor, TypedDoor, WsDoor } from "./doors.js";

export interface SpecGateway {
  ng: TestNodegate;
  http: HttpDoor;
  ws: WsDoor;
  /** EthService on the default network. */
  eth: TypedDoor;
  close(): Promise<void>;
}

/** Starts nodegate and opens a client on each door (the WebSocket connects on first use). */
export async function openSpecGateway(options: StartOptions): Promise<SpecGateway> {
  const ng = await startNodegate(options);
  const http = new HttpDoor(ng.rpcUrl);
  const ws = new WsDoor(ng.wsUrl);
  const eth = new TypedDoor(ng, EthService, { [API_KEY_HEADER]: ng.key });
  return {
    ng,
    http,
    ws,
    eth,
    close: async () => {
      eth.close();
      await ws.close();
      await ng.close();
    },
  };
}

/** The Starknet doors of a gateway whose network `name` is a Starknet network. */
export function starknetDoors(ng: TestNodegate, name: string): { http: HttpDoor; typed: TypedDoor } {
  return {
    http: new HttpDoor(`${ng.url}/${name}/v3/${ng.key}`),
    typed: new TypedDoor(ng, StarknetService, { [API_KEY_HEADER]: ng.key, [NETWORK_HEADER]: name }),
  };
}

const CONFORMANCE_DIR = join(import.meta.dirname, "../../../../shared/conformance/execution-apis");

interface ConformanceCase {
  file: string;
  method: string;
  request: { params?: unknown[] };
  response: { result?: unknown };
}

/**
 * Recordings of geth's answers from the execution-apis conformance suite
 * (its test chain starts before Byzantium, so it has receipts with root),
 * for the given .io files.
 */
export function conformanceRecordings(files: readonly string[]): Recording[] {
  const wanted = new Set(files);
  const found: Recording[] = [];
  for (const name of readdirSync(CONFORMANCE_DIR).filter((n) => n.endsWith(".jsonl"))) {
    for (const line of readFileSync(join(CONFORMANCE_DIR, name), "utf8").split("\n")) {
      if (line === "") continue;
      const c = JSON.parse(line) as ConformanceCase;
      if (!wanted.has(c.file) || !("result" in c.response)) continue;
      found.push({ method: c.method, params: c.request.params ?? [], result: c.response.result });
      wanted.delete(c.file);
    }
  }
  if (wanted.size > 0) throw new Error(`no conformance recording for ${[...wanted].join(", ")}`);
  return found;
}
