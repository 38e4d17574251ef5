/**
 * nodegate started as an operator starts it with NODEGATE_WORKERS (src/main.ts
 * as the primary, forking its workers): resolves once the banner has named the
 * port and the workers, and knows the primary's children for the tests that
 * watch or stop them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";

export interface WorkersPrimary {
  primary: ChildProcess;
  port: number;
  /** What the primary printed (the banner). */
  stdout: string;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** The primary's children (its workers), from /proc. */
  workerPids(): number[];
  /** Kills the primary and its workers at once (SIGKILL), if still running. */
  kill(): void;
}

export async function startWorkersPrimary(env: Record<string, string>): Promise<WorkersPrimary> {
  const primary = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], { env: { ...process.env, NODEGATE_PORT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  primary.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  let out = "";
  const port = await new Promise<number>((resolve, reject) => {
    primary.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /JSON-RPC \(HTTP\):\s+http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
      if (m && out.includes("workers:")) resolve(Number(m[1]));
    });
    primary.once("exit", (code) => reject(new Error(`nodegate exited with ${code}: ${out}${stderr}`)));
  });
  const workerPids = (): number[] => {
    const children = readFileSync(`/proc/${primary.pid}/task/${primary.pid}/children`, "utf8").trim();
    return children === "" ? [] : children.split(/\s+/).map(Number);
  };
  return {
    primary,
    port,
    stdout: out,
    stderr: () => stderr,
    workerPids,
    kill() {
      if (primary.exitCode !== null || primary.signalCode !== null) return;
      const workers = workerPids();
      primary.kill("SIGKILL");
      for (const pid of workers) process.kill(pid, "SIGKILL");
    },
  };
}

/** Whether a process with this pid is running (signal 0 reaches it). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
