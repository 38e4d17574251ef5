/**
 * Durations are timed on the monotonic clock: a wall clock stepped back (an
 * NTP correction, a VM restored from a snapshot) must not hold a healed
 * upstream's circuit open, nor keep /readyz on an answer from before a
 * failure (found from outside with libfaketime: both stalled until the
 * clock was restored).
 */
import { afterEach, expect, it, vi } from "vitest";
import { CircuitBreaker } from "../../src/upstream/circuit-breaker.js";
import { post, rpc } from "../support/http.js";
import { startNodegate } from "../support/nodegate.js";
import { type Answer, startProgrammableUpstream } from "../support/programmable-upstream.js";

afterEach(() => {
  vi.restoreAllMocks();
});

const stepBack = (ms: number) => {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => real() - ms);
};

it("an open circuit lets its probe through after the cooldown, though the wall clock went back two minutes", async () => {
  const breaker = new CircuitBreaker({ threshold: 2, cooldownMs: 50 });
  breaker.failure();
  breaker.failure();
  expect(breaker.allow()).toBe(false);
  stepBack(120_000);
  await new Promise((r) => setTimeout(r, 80));
  expect(breaker.allow()).toBe(true);
});

it("/readyz sees a failure that came after the wall clock went back, though the last answer looks newer", async () => {
  let answer: Answer = { result: "0x7a69" };
  const node = await startProgrammableUpstream(() => answer);
  const ng = await startNodegate({ upstreamUrl: node.url });
  try {
    expect((await post(ng.rpcUrl, rpc("eth_chainId"))).json.result).toBe("0x7a69");
    expect((await fetch(`${ng.url}/readyz`)).status).toBe(200);
    stepBack(120_000);
    answer = { raw: "unavailable", status: 503 };
    expect((await post(ng.rpcUrl, rpc("eth_chainId"))).json.error.code).toBe(-32050);
    expect((await fetch(`${ng.url}/readyz`)).status).toBe(503);
  } finally {
    await ng.close();
    await node.close();
  }
});
