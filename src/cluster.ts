/**
 * Several nodegate processes on one port (node:cluster), so a machine's cores
 * all serve. The primary owns the listening socket and hands each new
 * connection to a worker in turn; every worker is a whole nodegate with its
 * own upstream pools, answer cache, in-flight coalescing and rate-limit
 * counters (a key's limits apply per worker unless a shared RateLimitStore
 * is configured). A worker that dies is replaced.
 */
import cluster, { type Worker } from "node:cluster";
import type { AddressInfo } from "node:net";
import { serveClusterMetrics } from "./observability/cluster-metrics.js";

export interface Workers {
  /** Where the workers listen (the same port for all). */
  address: AddressInfo;
  pids(): number[];
  /**
   * Stops every worker: SIGTERM (each drains its in-flight requests), then
   * SIGKILL for one still running after `graceMs`. Resolves true when every
   * worker exited on its own.
   */
  stop(graceMs: number): Promise<boolean>;
}

/** How long after a worker's death the next is forked, at first. */
const FIRST_RESTART_DELAY_MS = 500;
/** The longest wait between forks in a crash loop. */
const MAX_RESTART_DELAY_MS = 32_000;
/** A worker that dies sooner than this after its fork counts as a crash at start. */
const EARLY_DEATH_MS = 10_000;

/** A worker's request for the configuration file's text, and the primary's answer (over the cluster's IPC channel). */
const CONFIG_TEXT_ASKED = "nodegate:config-text?";
const CONFIG_TEXT = "nodegate:config-text";

/**
 * In a worker: the configuration file's text as the primary read and checked
 * it (see forkWorkers' `configText`). Over the IPC channel, not the
 * environment: Linux refuses an environment string over 128 KiB, and a file
 * of a few thousand keys is larger (found from outside: `spawn E2BIG`).
 */
export function configTextFromPrimary(): Promise<string> {
  return new Promise((resolve) => {
    const onMessage = (message: unknown): void => {
      const m = message as { type?: unknown; text?: unknown } | null;
      if (m?.type !== CONFIG_TEXT || typeof m.text !== "string") return;
      process.off("message", onMessage);
      resolve(m.text);
    };
    process.on("message", onMessage);
    process.send?.({ type: CONFIG_TEXT_ASKED });
  });
}

/**
 * In the primary: forks `count` workers with `env` added, and resolves once all listen. `configText`: the
 * configuration file's text, handed to each worker that asks (configTextFromPrimary), replacements included.
 */
export function forkWorkers(count: number, env: Record<string, string> = {}, configText?: string): Promise<Workers> {
  if (!cluster.isPrimary) throw new Error("forkWorkers runs in the cluster primary");
  serveClusterMetrics();
  let stopping = false;
  let started = false;
  const live = new Set<Worker>();
  const forkedAt = new WeakMap<Worker, number>();
  let restartDelayMs = FIRST_RESTART_DELAY_MS;
  const fork = (): Worker => {
    const worker = cluster.fork(env);
    live.add(worker);
    forkedAt.set(worker, performance.now());
    // A message to a worker that has just died fails on its closed channel; unheard, that error would end the
    // primary, and every worker with it. The worker's exit is reported below.
    worker.on("error", (err: Error) => {
      process.stderr.write(`nodegate: worker ${worker.process.pid}: ${err.message}\n`);
    });
    worker.on("message", (message: unknown) => {
      if ((message as { type?: unknown } | null)?.type === CONFIG_TEXT_ASKED && configText !== undefined) worker.send({ type: CONFIG_TEXT, text: configText });
    });
    worker.on("exit", (code, signal) => {
      live.delete(worker);
      // Before all listen, a worker that exits fails the start instead (see below).
      if (stopping || !started) return;
      // A worker that dies soon after it started will likely die again (a crash at start): each such death doubles
      // the wait before the next fork, up to half a minute, so a crash loop does not keep a core busy forking.
      restartDelayMs = performance.now() - forkedAt.get(worker)! < EARLY_DEATH_MS ? Math.min(restartDelayMs * 2, MAX_RESTART_DELAY_MS) : FIRST_RESTART_DELAY_MS;
      // Said where deployers look: a worker crash was otherwise silent.
      process.stderr.write(`nodegate: worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); starting another in ${restartDelayMs / 1000} s\n`);
      // Not unref'd: when every worker is gone, this timer is all that keeps the primary alive until the next worker
      // starts (the port itself closes with the last worker, and opens again with the next).
      setTimeout(() => {
        if (!stopping) fork();
      }, restartDelayMs);
    });
    return worker;
  };
  return new Promise((resolve, reject) => {
    let listening = 0;
    let address: AddressInfo | undefined;
    const onListening = (_worker: Worker, at: { address: string; port: number }) => {
      address ??= { address: at.address, port: at.port, family: at.address.includes(":") ? "IPv6" : "IPv4" };
      if (++listening === count) {
        started = true;
        cluster.off("listening", onListening);
        resolve({
          address,
          pids: () => [...live].map((w) => w.process.pid).filter((p): p is number => p !== undefined),
          stop: (graceMs) => {
            stopping = true;
            return Promise.all(
              [...live].map(
                (w) =>
                  new Promise<boolean>((done) => {
                    if (w.isDead()) return done(true);
                    let killed = false;
                    w.once("exit", () => done(!killed));
                    w.process.kill("SIGTERM");
                    setTimeout(() => {
                      killed = true;
                      w.process.kill("SIGKILL");
                    }, graceMs).unref();
                  }),
              ),
            ).then((clean) => clean.every(Boolean));
          },
        });
      }
    };
    cluster.on("listening", onListening);
    for (let i = 0; i < count; i++) {
      fork().once("exit", (code) => {
        if (listening < count) {
          stopping = true; // a worker that cannot start (bad config) would fail again: give up
          for (const other of live) other.process.kill("SIGTERM");
          reject(new Error(`a worker exited with code ${code} before listening`));
        }
      });
    }
  });
}
