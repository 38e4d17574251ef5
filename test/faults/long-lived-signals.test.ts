/**
 * A native WebSocket connection's abort signal lives as long as the
 * connection, and every upstream call made for it carries that signal. Those
 * calls must leave nothing on it: no listener, and none of the per-call
 * entries AbortSignal.any() leaves on its sources on Node 20 (about 65 bytes
 * a call, for the connection's whole life: the soak found it as RSS growth).
 */
import { getEventListeners, setMaxListeners } from "node:events";
import { afterAll, beforeAll, expect, it } from "vitest";
import { HttpUpstream } from "../../src/upstream/http-upstream.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

let node: ProgrammableUpstream;
let upstream: HttpUpstream;

beforeAll(async () => {
  node = await startProgrammableUpstream((r) => (r.method === "slow" ? { delayMs: 2000, then: { result: null } } : { result: "0x1" }));
  upstream = new HttpUpstream({ url: node.url, label: "signals" });
});
afterAll(async () => {
  await upstream?.close();
  await node?.close();
});

/** What calls left on a signal: its abort listeners, and the dependants Node keeps for AbortSignal.any (an internal, looked up by name). */
function leftOn(signal: AbortSignal): { listeners: number; dependants: number } {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === "kDependantSignals");
  const dependants = key === undefined ? undefined : (signal as unknown as Record<symbol, Set<unknown> | undefined>)[key];
  return { listeners: getEventListeners(signal, "abort").length, dependants: dependants?.size ?? 0 };
}

it("calls that end (answered, failed at their deadline, or cancelled) leave nothing on the caller's long-lived signal", async () => {
  const connection = new AbortController();
  setMaxListeners(0, connection.signal); // as the WebSocket handler does: 200 calls in flight at once hold 200 listeners
  await Promise.all(Array.from({ length: 200 }, () => upstream.call("eth_chainId", "[]", { signal: connection.signal, timeoutMs: 5000 })));
  await expect(upstream.call("slow", "[]", { signal: connection.signal, timeoutMs: 50 })).rejects.toMatchObject({ code: -32051 });
  expect(leftOn(connection.signal)).toEqual({ listeners: 0, dependants: 0 });

  const cancelledOne = upstream.call("slow", "[]", { signal: connection.signal, timeoutMs: 5000 });
  expect(leftOn(connection.signal).listeners).toBe(1);
  connection.abort();
  await expect(cancelledOne).rejects.toMatchObject({ message: "request cancelled by the caller" });
  expect(leftOn(connection.signal)).toEqual({ listeners: 0, dependants: 0 });
});
