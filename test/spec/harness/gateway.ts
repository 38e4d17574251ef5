/**
 * A nodegate for spec tests with a client on each front door, and the
 * fixture data some rules need because Anvil cannot produce it.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CONFORMANCE_DIR } from "../../support/conformance.js";
import { EthService } from "../../../gen/nodegate/eth/v1/eth_service_pb.js";
import { StarknetService } from "../../../gen/nodegate/starknet/v1/starknet_service_pb.js";
import { API_KEY_HEADER, NETWORK_HEADER } from "../../../src/grpc/typed-services.js";
import type { Recording } from "../../support/fixture-upstream.js";
import { type StartOptions, startNodegate, type TestNodegate } from "../../support/nodegate.js";
import { HttpDoor, TypedDoor, WsDoor } from "./doors.js";

/** The doors to one network: /<network>/v3/<KEY>, /<network>/ws/v3/<KEY>, and the typed services with x-nodegate-network. */
export interface NetworkDoors {
  http: HttpDoor;
  ws: WsDoor;
  eth: TypedDoor;
  starknet: TypedDoor;
}

export interface SpecGateway extends NetworkDoors {
  ng: TestNodegate;
  /** The doors to a named network (opened once, closed with the gateway). */
  on(network: string): NetworkDoors;
  close(): Promise<void>;
}

function openDoors(ng: TestNodegate, network: string | undefined): NetworkDoors {
  const prefix = network === undefined ? "" : `/${network}`;
  const headers: Record<string, string> = { [API_KEY_HEADER]: ng.key };
  if (network !== undefined) headers[NETWORK_HEADER] = network;
  return {
    http: new HttpDoor(`${ng.url}${prefix}/v3/${ng.key}`),
    ws: new WsDoor(`ws://127.0.0.1:${ng.port}${prefix}/ws/v3/${ng.key}`),
    eth: new TypedDoor(ng, EthService, headers),
    starknet: new TypedDoor(ng, StarknetService, headers),
  };
}

/** Starts nodegate and opens a client on each door of its default network (the WebSocket connects on first use). */
export async function openSpecGateway(options: StartOptions): Promise<SpecGateway> {
  const ng = await startNodegate(options);
  const doors = new Map<string | undefined, NetworkDoors>([[undefined, openDoors(ng, undefined)]]);
  const on = (network: string | undefined): NetworkDoors => {
    let d = doors.get(network);
    if (d === undefined) {
      d = openDoors(ng, network);
      doors.set(network, d);
    }
    return d;
  };
  return {
    ...on(undefined),
    ng,
    on,
    close: async () => {
      for (const d of doors.values()) {
        d.eth.close();
        d.starknet.close();
        await d.ws.close();
      }
      await ng.close();
    },
  };
}


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

/**
 * A gateway with two Ethereum networks: "ethereum" (the default) on a live
 * node, and "recorded" answering from fixtures, for what the live node cannot
 * produce (uncles, pending states of other clients, older forks).
 */
export function openLiveAndRecordedGateway(liveUrl: string, fixturesUrl: string): Promise<SpecGateway> {
  return openSpecGateway({
    upstreamUrl: liveUrl,
    networks: [
      { name: "ethereum", family: "eth", upstreams: [{ label: "anvil", url: liveUrl }] },
      { name: "recorded", family: "eth", upstreams: [{ label: "fixtures", url: fixturesUrl }] },
    ],
  });
}
