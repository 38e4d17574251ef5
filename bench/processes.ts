/**
 * Starts the benchmark's processes on 127.0.0.1 and stops every one of them:
 * the canned upstream, the reference proxy and nodegate run as separate Node
 * processes (their CPU and memory are measured from /proc), Anvil as itself.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { startAnvil } from "../src/embedded/anvil.js";
import type { BenchNodegateOptions } from "./nodegate-process.js";

export interface Service {
  name: string;
  url: string;
  port: number;
  /** Every process serving (a cluster's primary and workers). */
  pids: number[];
  /** Sends an IPC request to a nodegate process and waits for its answer. */
  ask?(type: string): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

const running = new Set<Service>();

function stopChild(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
    setTimeout(() => child.kill("SIGKILL"), 3000).unref();
  });
}

/** The V8 flag nodegate runs with (package.json's start script, bin/nodegate.mjs, the Dockerfile). */
const NODEGATE_NODE_FLAGS = ["--initial-old-space-size=128"];

function nodeScript(script: string, args: string[], env: Record<string, string>, stdout: "pipe" | "ignore", nodeFlags: string[] = []): ChildProcess {
  return spawn(process.execPath, [...nodeFlags, "--import", "tsx", "--expose-gc", script, ...args], {
    stdio: ["ignore", stdout, "inherit", "ipc"],
    env: { ...process.env, ...env },
  });
}

function track(service: Service): Service {
  running.add(service);
  const stop = service.stop;
  service.stop = async () => {
    running.delete(service);
    await stop();
  };
  return service;
}

/** Starts a script that prints {"port": N} once listening. */
async function startPrinting(name: string, script: string, args: string[]): Promise<Service> {
  const child = nodeScript(script, args, {}, "pipe");
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const [line] = (await Promise.race([once(lines, "line"), once(child, "exit").then(() => [undefined])])) as [string | undefined];
  if (line === undefined) throw new Error(`${name} exited before listening`);
  lines.close();
  child.stdout?.resume();
  const { port } = JSON.parse(line) as { port: number };
  return track({ name, url: `http://127.0.0.1:${port}`, port, pids: [child.pid as number], stop: () => stopChild(child) });
}

export function startCannedUpstream(name: string, serviceMs = 0): Promise<Service> {
  return startPrinting(name, "bench/canned-upstream.ts", serviceMs > 0 ? ["--service-ms", String(serviceMs)] : []);
}

export function startRefProxy(name: string, upstreamUrl: string): Promise<Service> {
  return startPrinting(name, "bench/ref-proxy.ts", [upstreamUrl]);
}

export function startIdleGrpcServer(name: string): Promise<Service> {
  return startPrinting(name, "bench/idle-grpc-server.ts", []);
}

export async function startNodegate(name: string, options: BenchNodegateOptions): Promise<Service> {
  // Request logs go where a deployment sends stdout; here, /dev/null.
  const child = nodeScript("bench/nodegate-process.ts", [], { NODEGATE_BENCH: JSON.stringify(options) }, "ignore", NODEGATE_NODE_FLAGS);
  const [ready] = (await Promise.race([once(child, "message"), once(child, "exit").then(() => [undefined])])) as [
    { port: number; pids: number[] } | undefined,
  ];
  if (ready === undefined) throw new Error(`${name} exited before listening`);
  const ask = async (type: string) => {
    child.send({ type });
    for (;;) {
      const [m] = (await once(child, "message")) as [Record<string, unknown>];
      if (m.type === type) return m;
    }
  };
  return track({ name, url: `http://127.0.0.1:${ready.port}`, port: ready.port, pids: ready.pids, ask, stop: () => stopChild(child) });
}

export async function startBenchAnvil(name: string): Promise<Service> {
  // Finality far behind the head: no Anvil block is final, so nothing here is answered from the cache.
  const anvil = await startAnvil({ args: ["--slots-in-an-epoch", "100000", "--no-request-size-limit"] });
  return track({ name, url: anvil.url, port: anvil.port, pids: anvil.pid === undefined ? [] : [anvil.pid], stop: () => anvil.stop() });
}

/** Stops everything still running (also on Ctrl-C and on the watchdog). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((s) => s.stop()));
}
