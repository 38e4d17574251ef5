/**
 * The embedded default upstream: a local Anvil node from the
 * @foundry-rs/anvil npm package (its platform package ships the binary).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import net from "node:net";
import { dirname, join } from "node:path";

export interface AnvilOptions {
  /** Port to listen on; 0 picks a free one. */
  port?: number;
  /** Extra command-line arguments (--block-time, --chain-id, ...). */
  args?: string[];
  /**
   * In a process group of its own, so a terminal's Ctrl-C (SIGINT to the
   * whole foreground group) reaches nodegate alone, which drains its calls
   * to the node and then stops it (found from outside: the node died with
   * the signal, and every call in flight failed "connection refused"). It is
   * killed when this process exits, however it exits: a watchdog shell holds
   * a pipe from this process and kills the node when the pipe closes, which
   * a SIGKILL or an unhandled signal (SIGQUIT, Ctrl-\) does too, where no
   * exit hook runs (found from outside: the node was left running).
   */
  ownProcessGroup?: boolean;
}

export interface AnvilNode {
  /** HTTP JSON-RPC URL. */
  url: string;
  /** WebSocket JSON-RPC URL (Anvil serves both on one port). */
  wsUrl: string;
  port: number;
  /** The node's process id (for measuring it). */
  pid: number | undefined;
  /** Calls `listener` with how the node ended ("exit code 1", "signal SIGKILL") if it ends other than by stop(). */
  onUnexpectedExit(listener: (how: string) => void): void;
  stop(): Promise<void>;
}

const PLATFORM_PACKAGES: Record<string, string> = {
  "linux-x64": "@foundry-rs/anvil-linux-amd64",
  "linux-arm64": "@foundry-rs/anvil-linux-arm64",
  "darwin-x64": "@foundry-rs/anvil-darwin-amd64",
  "darwin-arm64": "@foundry-rs/anvil-darwin-arm64",
  "win32-x64": "@foundry-rs/anvil-win32-amd64",
};

/** Path of the anvil binary installed by npm for this platform. */
export function anvilBinary(): string {
  const pkg = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  if (pkg === undefined) throw new Error(`no Anvil build for ${process.platform}-${process.arch}`);
  const require = createRequire(import.meta.url);
  const manifest = require.resolve(`${pkg}/package.json`);
  return join(dirname(manifest), "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitForRpc(url: string, child: ChildProcess, deadlineMs: number): Promise<void> {
  const started = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited with code ${child.exitCode}`);
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
      });
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (performance.now() - started > deadlineMs) throw new Error("anvil did not answer within the deadline");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A shell that kills `pid` once this process's end of its stdin closes (this process ended, however), in a process
 * group of its own so the signals sent to nodegate's group do not end it first. It holds nothing open in this
 * process's event loop.
 */
function watchOverNode(pid: number | undefined): ChildProcess | undefined {
  if (pid === undefined) return undefined;
  const watchdog = spawn("/bin/sh", ["-c", 'read -r _; kill -KILL "$0" 2>/dev/null', String(pid)], { stdio: ["pipe", "ignore", "ignore"], detached: true });
  watchdog.on("error", () => {});
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return watchdog;
}

/** Starts Anvil on 127.0.0.1 and resolves once it answers JSON-RPC. */
export async function startAnvil(options: AnvilOptions = {}): Promise<AnvilNode> {
  const port = options.port || (await freePort());
  const child = spawn(anvilBinary(), ["--host", "127.0.0.1", "--port", String(port), "--silent", ...(options.args ?? [])], {
    stdio: ["ignore", "ignore", "pipe"],
    detached: options.ownProcessGroup === true,
  });
  if (options.ownProcessGroup === true) {
    const killOnExit = (): void => void child.kill("SIGKILL");
    process.once("exit", killOnExit);
    const watchdog = watchOverNode(child.pid);
    child.once("exit", () => {
      process.off("exit", killOnExit);
      watchdog?.kill("SIGKILL");
    });
  }
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-2000);
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForRpc(url, child, 15_000);
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${(err as Error).message}${stderr ? `: ${stderr.trim()}` : ""}`);
  }
  let stopping = false;
  return {
    url,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    pid: child.pid,
    onUnexpectedExit(listener) {
      child.once("exit", (code, signal) => {
        if (!stopping) listener(signal === null ? `exit code ${code}` : `signal ${signal}`);
      });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        stopping = true;
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 3000).unref();
      }),
  };
}
