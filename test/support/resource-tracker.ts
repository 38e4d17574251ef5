/**
 * Finds sockets, servers and timers that outlive a test. Two views:
 * process.getActiveResourcesInfo() (what keeps the process alive, as a
 * multiset of types) and an async hook that remembers every socket, server,
 * HTTP/2 session and timer created while it is on, unref'd ones included,
 * and forgets each when it is closed or fires for the last time.
 */
import { createHook } from "node:async_hooks";

/**
 * Resource types that are leaks when they outlive the code that made them. Not HTTP2SESSION: its destroy is
 * reported only once the session is garbage collected, long after it closed; an open session keeps its
 * TCPWRAP open, which is tracked.
 */
const TRACKED = new Set(["Timeout", "TCPWRAP", "TCPSERVERWRAP", "TCPCONNECTWRAP", "HTTPCLIENTREQUEST", "PIPEWRAP"]);

export interface Created {
  type: string;
  /** Where it was created, for the failure message. */
  stack: string;
}

export interface ResourceTracker {
  /** Tracked resources created since start() that are still open. */
  alive(): Created[];
  stop(): void;
}

export function trackResources(): ResourceTracker {
  const live = new Map<number, Created>();
  const hook = createHook({
    init(asyncId, type) {
      if (!TRACKED.has(type)) return;
      const holder: { stack?: string } = {};
      Error.captureStackTrace(holder);
      // Past "Error" and this hook's own frame, which is in this file too: matching the whole stack skipped everything.
      const frames = (holder.stack ?? "").split("\n").slice(2);
      if (frames.some((line) => line.includes("resource-tracker.ts"))) return; // the tracker's own polling
      // The test runner's own timers (a hook's timeout, its RPC to the main process) are not the code under test's.
      const caller = frames.find((line) => line.includes("/") && !line.includes("(node:"));
      if (caller === undefined || /node_modules\/(@vitest|vitest)\//.test(caller)) return;
      const stack = frames
        .filter((line) => !line.includes("node:internal") && !/node_modules\/(@vitest|vitest)\//.test(line))
        .slice(0, 6)
        .join("\n");
      live.set(asyncId, { type, stack });
    },
    destroy(asyncId) {
      live.delete(asyncId);
    },
  });
  hook.enable();
  return {
    alive: () => [...live.values()],
    stop: () => hook.disable(),
  };
}

/** process.getActiveResourcesInfo() as sorted type names. */
export function activeResources(): string[] {
  return process.getActiveResourcesInfo().sort();
}

/** The resources active now beyond those of `baseline` (by type; fewer is fine). */
export function beyond(baseline: readonly string[], now: readonly string[] = activeResources()): string[] {
  const left = [...baseline];
  return now.filter((type) => {
    const i = left.indexOf(type);
    if (i < 0) return true;
    left.splice(i, 1);
    return false;
  });
}

/**
 * Waits (without timers of its own that would show up) until `check` holds,
 * polling every 20 ms for up to `ms`; returns whether it did.
 */
export async function settles(check: () => boolean | Promise<boolean>, ms = 3000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) return false;
    await new Promise<void>((resolve) => setImmediate(resolve));
    await new Promise<void>((resolve) => setTimeout(resolve, 20).unref());
  }
  return true;
}
