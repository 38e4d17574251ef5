/**
 * The circuit breaker and the network's use of it: after the threshold the
 * circuit opens and calls fail fast; after the cooldown one probe goes out,
 * and calls that come while it is out wait for its outcome instead of being
 * refused (found from outside: the cache's finality read took the probe, and
 * the caller's own call, right behind it, was refused although the upstream
 * had healed).
 */
import { describe, expect, it, vi } from "vitest";
import type { Logger } from "pino";
import { keptAliveConnectionClosed, noConnectionInTime, spareRefused, upstreamTimeout, upstreamUnavailable } from "../../src/errors/catalogue.js";
import { CallCancellation } from "../../src/call-signal.js";
import { CircuitBreaker } from "../../src/upstream/circuit-breaker.js";
import { Network } from "../../src/upstream/network.js";
import { resultText, type UpstreamResult } from "../../src/upstream/reply.js";
import type { Upstream } from "../../src/upstream/upstream.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const result = (text: string): UpstreamResult => ({ body: Buffer.from(text), start: 0, end: text.length });

/** An upstream that is down until healed, and answers each call after `delayMs`. */
function scriptedUpstream() {
  const state = { down: true, delayMs: 0, calls: 0 };
  const upstream: Upstream = {
    label: "scripted",
    async call() {
      state.calls++;
      await sleep(state.delayMs);
      if (state.down) throw upstreamUnavailable("connection refused");
      return result('"0x1"');
    },
    async close() {},
  };
  return { upstream, state };
}

describe("CircuitBreaker", () => {
  it("an outage with the provider's Retry-After opens the circuit at once, for that long, and callers are told how long", async () => {
    // Found from outside: a provider answering 429 with Retry-After: 7 was probed every second.
    const { upstream, state } = scriptedUpstream();
    upstream.call = async () => {
      state.calls++;
      throw upstreamUnavailable("HTTP 429", undefined, 2);
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 1000, breaker: { threshold: 5, cooldownMs: 50 } });
    await expect(network.call("eth_chainId", "[]")).rejects.toMatchObject({ message: "upstream unavailable: HTTP 429", retryAfterSeconds: 2 });
    // Past the cooldown, within the pause: nothing reaches the upstream, and callers get the time left.
    await sleep(120);
    await expect(network.call("eth_chainId", "[]")).rejects.toMatchObject({ message: expect.stringMatching(/calls are paused/), retryAfterSeconds: 2 });
    expect(state.calls).toBe(1);
    // A pause longer than a minute is held to a minute.
    const breaker = new CircuitBreaker({ cooldownMs: 50 });
    breaker.failure(0, 3_600_000);
    expect(breaker.allow(59_999)).toBe(false);
    expect(breaker.allow(60_000)).toBe(true);
  });

  it("the provider's pause holds when a call sent before it is answered meanwhile", async () => {
    // Found from outside: a slow call answered after a 503 with Retry-After: 5 closed the circuit within a second,
    // and the next calls went straight back to the provider that had asked for the pause.
    const { upstream, state } = scriptedUpstream();
    let answerSlow!: () => void;
    const slowAnswered = new Promise<void>((resolve) => {
      answerSlow = resolve;
    });
    upstream.call = async (method) => {
      state.calls++;
      if (method === "eth_getBalance") {
        await slowAnswered;
        return result('"0x1"');
      }
      throw upstreamUnavailable("HTTP 503", undefined, 5);
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 10_000, breaker: { threshold: 5, cooldownMs: 50 } });
    const slow = network.call("eth_getBalance", "[]");
    await expect(network.call("eth_blockNumber", "[]")).rejects.toMatchObject({ retryAfterSeconds: 5 });
    answerSlow();
    await expect(slow).resolves.toBeDefined();
    expect(network.primaryCircuit).toBe("open");
    await sleep(120);
    await expect(network.call("eth_chainId", "[]")).rejects.toMatchObject({ message: expect.stringMatching(/calls are paused/), retryAfterSeconds: 5 });
    expect(state.calls).toBe(2);
    // Once the pause is over, an answer closes the circuit as any does.
    const breaker = new CircuitBreaker({ cooldownMs: 50 });
    breaker.failure(0, 1000);
    breaker.success(500);
    expect(breaker.state).toBe("open");
    breaker.success(1000);
    expect(breaker.state).toBe("closed");
  });

  it("the provider's pause holds when calls sent before it fail meanwhile, even past the threshold", () => {
    // Found from outside: six slow calls failing (plain 503s) after a 503 with Retry-After: 6 reopened the circuit
    // for a cooldown, and the provider was asked again after 4 s.
    const breaker = new CircuitBreaker({ threshold: 3, cooldownMs: 1000 });
    breaker.failure(0, 6000);
    for (const at of [2000, 2100, 2200, 2300, 2400, 2500]) breaker.failure(at);
    expect(breaker.allow(3500)).toBe(false);
    expect(breaker.allow(5999)).toBe(false);
    expect(breaker.allow(6000)).toBe(true);
    // Nor do failures in its last cooldown stretch it, or end what callers are told of it (found from outside: calls
    // dropped 0.7 s before a 2 s pause ended made it a cooldown, 0.3 s longer, with no Retry-After for callers).
    const late = new CircuitBreaker({ threshold: 3, cooldownMs: 1000 });
    late.failure(0, 2000);
    for (const at of [1300, 1301, 1302, 1303]) late.failure(at);
    expect(late.retryAfterSeconds(1500)).toBe(1);
    expect(late.allow(1999)).toBe(false);
    expect(late.allow(2000)).toBe(true);
    // A longer pause asked for meanwhile replaces the shorter one.
    const longer = new CircuitBreaker({ threshold: 3, cooldownMs: 1000 });
    longer.failure(0, 2000);
    longer.failure(1000, 5000);
    expect(longer.allow(5999)).toBe(false);
    expect(longer.allow(6000)).toBe(true);
  });

  it("counts consecutive outages only: an answer between them starts the count again", () => {
    // README: "After circuitBreaker.threshold consecutive outages (5) the primary's circuit opens".
    const breaker = new CircuitBreaker({ threshold: 3, cooldownMs: 60_000 });
    for (let round = 0; round < 5; round++) {
      breaker.failure();
      breaker.failure();
      expect(breaker.state, `round ${round}`).toBe("closed");
      breaker.success();
    }
    breaker.failure();
    breaker.failure();
    breaker.failure();
    expect(breaker.state).toBe("open");
  });

  it("opens after the threshold, lets one probe through after the cooldown, and wakes those waiting on it", async () => {
    const breaker = new CircuitBreaker({ threshold: 2, cooldownMs: 50 });
    breaker.failure();
    breaker.failure();
    expect(breaker.allow()).toBe(false);
    await sleep(60);
    expect(breaker.allow()).toBe(true); // the probe
    expect(breaker.probing).toBe(true);
    expect(breaker.allow()).toBe(false);
    const waited = breaker.probeSettled();
    breaker.success();
    await waited;
    expect(breaker.allow()).toBe(true);
  });

  it("a probe still out after a cooldown stops holding others back", async () => {
    const breaker = new CircuitBreaker({ threshold: 1, cooldownMs: 40 });
    breaker.failure();
    await sleep(50);
    expect(breaker.allow()).toBe(true);
    const started = performance.now();
    await breaker.probeSettled();
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    expect(breaker.probing).toBe(false);
    expect(breaker.allow()).toBe(true);
  });

  it("a call waiting on the probe is not woken before the cooldown has passed by the clock the breaker reads", async () => {
    // Found as a flaky test: a timer counts on the loop's monotonic clock, the breaker on Date.now(); a timer set for
    // the time left could fire up to a millisecond early by Date.now(), and the woken call found the probe still out.
    const breaker = new CircuitBreaker({ threshold: 1, cooldownMs: 7 });
    for (let round = 0; round < 40; round++) {
      breaker.failure();
      await sleep(8);
      expect(breaker.allow()).toBe(true);
      await sleep(round % 4); // the probe has been out for a while when the call comes
      await breaker.probeSettled();
      expect(breaker.probing, `round ${round}`).toBe(false);
    }
  });

  it("a probe released without a verdict leaves the circuit half-open: the next probe's failure re-opens it for a cooldown", () => {
    // Found from outside: released to "open" with its long-passed opening time, a circuit a provider's Retry-After had
    // opened (fewer outages than the threshold) stayed so through the failed probe, and let the next call out at once.
    const breaker = new CircuitBreaker({ threshold: 5, cooldownMs: 1000 });
    breaker.failure(0, 2000);
    expect(breaker.allow(2000)).toBe(true);
    breaker.release(breaker.probeSerial);
    expect(breaker.state).toBe("half-open");
    expect(breaker.allow(2050)).toBe(true); // the next call may probe
    breaker.failure(2100);
    expect(breaker.state).toBe("open");
    expect(breaker.allow(2200)).toBe(false);
    expect(breaker.allow(3100)).toBe(true);
  });

  it("an earlier probe a newer one overtook does not end the newer one's wait when it is released", async () => {
    // Found from outside: a readiness check's probe, stuck on a hung node for its 2 s deadline, was released after a
    // caller's call had let a newer probe out; the calls waiting on the newer one were woken and refused, though it
    // then found the node healed.
    const breaker = new CircuitBreaker({ threshold: 1, cooldownMs: 20 });
    breaker.failure();
    await sleep(25);
    expect(breaker.allow()).toBe(true);
    const stale = breaker.probeSerial;
    await sleep(25); // out for more than a cooldown: the next call may probe too
    expect(breaker.allow()).toBe(true);
    let woken = false;
    const waited = breaker.probeSettled().then(() => (woken = true));
    breaker.release(stale);
    await sleep(0);
    expect(woken).toBe(false);
    expect(breaker.probing).toBe(true);
    breaker.success(); // the newer probe's verdict
    await waited;
    expect(breaker.state).toBe("closed");
  });
});

describe("Network", () => {
  it("a caller leaving a call sent before the circuit opened does not end the wait of calls behind the probe", async () => {
    // Found from outside: its release woke the calls waiting on the probe, and they were refused ("calls are paused")
    // although the probe, still out, then found the node healed.
    const { upstream, state } = scriptedUpstream();
    const call = upstream.call;
    upstream.call = async (method, params, options) => {
      if (params === '["held"]') {
        await new Promise<void>((resolve) => options.signal?.addEventListener("abort", () => resolve(), { once: true }));
        throw new Error("the caller left");
      }
      if (method === "eth_chainId" && !state.down) await sleep(150); // the probe: the healed node answers it in 150 ms
      return call(method, params, options);
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 10_000, breaker: { threshold: 1, cooldownMs: 300 } });
    const caller = new CallCancellation();
    const held = network.call("eth_getLogs", '["held"]', { signal: caller.signal }).catch((err: Error) => err);
    await sleep(10);
    await expect(network.call("eth_blockNumber", "[]")).rejects.toMatchObject({ code: -32050 });
    state.down = false;
    await sleep(320);
    const waiting = network.call("eth_blockNumber", "[]");
    await sleep(30);
    expect(network.primaryCircuit).toBe("half-open");
    caller.abort();
    await held;
    expect(resultText(await waiting)).toBe('"0x1"');
    expect(network.primaryCircuit).toBe("closed");
  });

  it("a call that comes while the probe is out waits for it, and is answered when the upstream has healed", async () => {
    const { upstream, state } = scriptedUpstream();
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 1000, breaker: { threshold: 2, cooldownMs: 50 } });
    for (let i = 0; i < 2; i++) await expect(network.call("eth_chainId", "[]")).rejects.toMatchObject({ code: -32050 });
    await expect(network.call("eth_chainId", "[]")).rejects.toMatchObject({ message: expect.stringMatching(/calls are paused/) });
    state.down = false;
    state.delayMs = 30;
    await sleep(60);
    // The probe (say, the cache's finality read) and the caller's call right behind it.
    const [probe, caller] = await Promise.allSettled([network.call("eth_getBlockByNumber", '["finalized",false]'), network.call("eth_chainId", "[]")]);
    expect(probe.status).toBe("fulfilled");
    expect(caller.status).toBe("fulfilled");
    expect(network.primaryCircuit).toBe("closed");
  });

  it("a call waiting on a probe that fails is refused as the circuit re-opens", async () => {
    const { upstream, state } = scriptedUpstream();
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 1000, breaker: { threshold: 1, cooldownMs: 50 } });
    await expect(network.call("eth_chainId", "[]")).rejects.toMatchObject({ code: -32050 });
    state.delayMs = 20;
    await sleep(60);
    const [probe, caller] = await Promise.allSettled([network.call("eth_chainId", "[]"), network.call("eth_chainId", "[]")]);
    expect(probe.status).toBe("rejected");
    expect(caller).toMatchObject({ status: "rejected", reason: { message: expect.stringMatching(/calls are paused/) } });
    expect(state.calls).toBe(2); // the first outage and the probe: the waiting call never reached the upstream
  });
});

describe("waiting on a probe", () => {
  it("a call waits for the probe out when it came, not for one another call starts meanwhile", async () => {
    // Found from outside: with a silent node and calls coming steadily, a new probe started every cooldown, and a
    // call waited on probe after probe, for up to 30 s, before being told calls were paused.
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const breaker = new CircuitBreaker({ threshold: 1, cooldownMs: 40 });
      breaker.failure();
      vi.advanceTimersByTime(40);
      expect(breaker.allow()).toBe(true); // probe A
      vi.advanceTimersByTime(5);
      // At A's cooldown another call takes the probe (B), just before the waiting call's timer fires.
      let probeB = false;
      setTimeout(() => (probeB = breaker.allow()), 35);
      let woken = false;
      void breaker.probeSettled().then(() => (woken = true));
      await vi.advanceTimersByTimeAsync(35);
      expect(probeB).toBe(true);
      expect(woken).toBe(true);
      expect(breaker.allow()).toBe(false); // B is out: the woken call is refused (or fails over), not held
    } finally {
      vi.useRealTimers();
    }
  });

  it("the wait is taken from the call's deadline", async () => {
    const timeouts: number[] = [];
    const { upstream, state } = scriptedUpstream();
    upstream.call = async (_method, _params, options) => {
      state.calls++;
      timeouts.push(options.timeoutMs ?? -1);
      await sleep(state.delayMs);
      if (state.down) throw upstreamUnavailable("connection refused");
      return result('"0x1"');
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 1000, breaker: { threshold: 1, cooldownMs: 200 } });
    await expect(network.call("eth_blockNumber", "[]")).rejects.toMatchObject({ code: -32050 });
    await sleep(210);
    // The node is back, slowly: nodegate's own probe (its chain id) answers after 60 ms, and the call that waited
    // for it is then sent with what is left of its deadline.
    state.down = false;
    state.delayMs = 60;
    await expect(network.call("eth_blockNumber", "[]")).resolves.toBeDefined();
    expect(timeouts).toHaveLength(3);
    expect(timeouts[1]).toBe(1000); // the probe: min(5 s, the network's deadline)
    expect(timeouts[2]).toBeLessThan(1000 - 30); // about 60 ms waited
    expect(timeouts[2]).toBeGreaterThan(1000 - 200);
  });

  it("no caller's call is the probe: with a hung primary and no partner, callers wait a cooldown at most and are told calls are paused", async () => {
    // Found from outside: a caller let through as the probe every cooldown waited upstreamTimeoutMs (30 s) on a hung
    // primary, beside nodegate's own question.
    const { upstream, state } = scriptedUpstream();
    const methods: string[] = [];
    upstream.call = async (method) => {
      methods.push(method);
      if (state.down) throw upstreamUnavailable("connection refused");
      await new Promise(() => {}); // hung
      return result('"0x1"');
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 10_000, breaker: { threshold: 1, cooldownMs: 50 } });
    await expect(network.call("eth_blockNumber", "[]")).rejects.toMatchObject({ code: -32050 });
    state.down = false; // from now on, hung
    for (let i = 0; i < 4; i++) {
      await sleep(60);
      await expect(network.call("eth_blockNumber", "[]")).rejects.toMatchObject({ code: -32050, message: expect.stringMatching(/calls are paused/) });
    }
    expect(methods.filter((m) => m === "eth_blockNumber")).toHaveLength(1); // the first call only
    // A question per cooldown: the ones still out (hung) do not hold back the next.
    expect(methods.filter((m) => m === "eth_chainId")).toHaveLength(4);
  });

  it("a node that heals while questions it held are still out answers again at the next cooldown, not after their deadline", async () => {
    // Found from outside: the probe waited for the stuck question's deadline (5 s) before asking again, so a healed
    // node stayed paused 4-6 s.
    const { upstream, state } = scriptedUpstream();
    let hung = true;
    upstream.call = async (method) => {
      state.calls++;
      if (state.down) throw upstreamUnavailable("connection refused");
      if (hung) await new Promise(() => {}); // held for good, as a node that hung drops what it held
      return result(method === "eth_chainId" ? '"0x7a69"' : '"0x1"');
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 10_000, breaker: { threshold: 1, cooldownMs: 50 } });
    await expect(network.call("eth_blockNumber", "[]")).rejects.toMatchObject({ code: -32050 });
    state.down = false; // hung: the probe after the cooldown is held
    await sleep(60);
    await expect(network.call("eth_blockNumber", "[]")).rejects.toMatchObject({ message: expect.stringMatching(/calls are paused/) });
    hung = false; // healed, with the question of before still out (its deadline: 5 s)
    await sleep(60);
    await expect(network.call("eth_blockNumber", "[]")).resolves.toBeDefined();
    expect(network.primaryCircuit).toBe("closed");
  });

  it("nodegate's chain id question goes out once a cooldown at most, answered or not", async () => {
    // Found from outside: writes failing on kept-alive connections a node closed, each with nothing heard since it was
    // sent, asked a question each: 125 in half a second, each answered at once.
    const { upstream } = scriptedUpstream();
    const methods: string[] = [];
    upstream.call = async (method) => {
      methods.push(method);
      if (method === "eth_sendRawTransaction") throw keptAliveConnectionClosed(method);
      return result('"0x7a69"');
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 10_000, breaker: { threshold: 1, cooldownMs: 60_000 } });
    for (let i = 0; i < 10; i++) {
      await expect(network.call("eth_sendRawTransaction", '["0x02"]')).rejects.toMatchObject({ code: -32050 });
      await sleep(5);
    }
    expect(methods.filter((m) => m === "eth_chainId")).toHaveLength(1);
    expect(network.primaryCircuit).toBe("closed");
  });

  it("a call sent before the node's last answer that fails afterwards is old news: it does not open the circuit", async () => {
    // Found from outside: calls held in a 2 s stall timed out together 30 s later and opened the circuit of a node
    // that had answered every call since.
    const { upstream, state } = scriptedUpstream();
    state.down = false;
    let failHeld!: () => void;
    const held = new Promise<void>((resolve) => {
      failHeld = resolve;
    });
    upstream.call = async (method, params) => {
      state.calls++;
      if (params === '["held"]') {
        await held;
        throw upstreamUnavailable("connection reset");
      }
      return result(method === "eth_chainId" ? '"0x7a69"' : '"0x1"');
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 10_000, breaker: { threshold: 1, cooldownMs: 60_000 } });
    const stale = network.call("eth_getBalance", '["held"]');
    await expect(network.call("eth_blockNumber", "[]")).resolves.toBeDefined();
    failHeld();
    await expect(stale).rejects.toMatchObject({ code: -32050 });
    expect(network.primaryCircuit).toBe("closed");
    // One that fails with no answer since it was sent still counts (threshold 1).
    const fresh = network.call("eth_getBalance", '["held"]');
    await expect(fresh).rejects.toMatchObject({ code: -32050 });
    expect(network.primaryCircuit).toBe("open");
  });
});

describe("the warn line of a silent node", () => {
  it("a queued question that never got a connection opens the circuit as the node's silence, not as nodegate's own limit", async () => {
    // Found from outside: behind a front capping connections, the warn line quoted "limit exceeded: no connection to the
    // node came free ... try again shortly" as the reason a hung node's circuit opened.
    const warned: string[] = [];
    const log = { warn: (fields: { err?: string }) => warned.push(String(fields.err)), info: () => {}, debug: () => {} } as unknown as Logger;
    let release = () => {};
    const hangs = () => new Promise<void>((resolve) => (release = resolve));
    let hang: Promise<void> | undefined;
    const upstream: Upstream = {
      label: "capped",
      async call(method, _params, options) {
        if (options.spare === true) throw spareRefused("the node's front refused the spare connection");
        if (method === "eth_chainId") {
          // Queued behind the callers' calls the node holds: never sent.
          await sleep(options.timeoutMs ?? 0);
          throw noConnectionInTime(options.timeoutMs ?? 0, 1);
        }
        if (hang !== undefined) await hang;
        return result('"0x1"');
      },
      async close() {},
    };
    const network = new Network({ name: "ethereum", family: "eth", upstreams: [upstream], timeoutMs: 30_000, breaker: { threshold: 5, cooldownMs: 50 }, log });
    await network.call("eth_getBalance", "[]"); // a fast pace known
    // A first hang: the first question waits on, past its verdict, for the rest of the network's deadline.
    hang = hangs();
    const first = network.call("eth_blockNumber", "[]");
    await vi.waitFor(() => expect(network.primaryCircuit).toBe("open"), { timeout: 10_000, interval: 100 });
    release();
    await first;
    hang = undefined;
    await network.call("eth_blockNumber", "[]");
    expect(network.primaryCircuit).toBe("closed");
    // A second hang: its question, the first still out, has no verdict timer of its own and runs out queued.
    hang = hangs();
    const second = network.call("eth_blockNumber", "[]");
    await vi.waitFor(() => expect(network.primaryCircuit).toBe("open"), { timeout: 10_000, interval: 100 });
    release();
    await second;
    expect(warned).toHaveLength(2);
    for (const line of warned) expect(line).toMatch(/^upstream timeout: no answer within \d+ ms \(its chain id question went unanswered, after calls did\)$/);
    await network.close();
  }, 25_000);
});

describe("waiting on a probe, with a partner", () => {
  it("a call a partner may answer goes to it while the primary's probe is out, rather than waiting behind it", async () => {
    const primary = scriptedUpstream();
    const partner = scriptedUpstream();
    partner.state.down = false;
    const network = new Network({
      name: "ethereum",
      family: "eth",
      upstreams: [primary.upstream, { ...partner.upstream, label: "partner" }],
      timeoutMs: 1000,
      breaker: { threshold: 1, cooldownMs: 50 },
      failover: { methods: ["eth_chainId"], plans: ["growth"] },
    });
    const mayFailOver = { idempotent: true, plan: "growth" as const };
    await expect(network.call("eth_chainId", "[]", mayFailOver)).resolves.toBeDefined(); // the primary fails: open, and the partner answers
    await sleep(60);
    primary.state.delayMs = 300; // the probe is out for 300 ms, then fails
    let probeSettled = false;
    const probe = network.call("eth_blockNumber", "[]").finally(() => (probeSettled = true));
    await sleep(5);
    const callsBefore = partner.state.calls;
    await expect(network.call("eth_chainId", "[]", mayFailOver)).resolves.toBeDefined();
    expect(probeSettled).toBe(false);
    expect(partner.state.calls).toBe(callsBefore + 1);
    await probe.catch(() => {});
  });
});

describe("a provider's pause, with a partner", () => {
  it("a call sent before the pause and answered in it does not bring the primary back: nothing is asked of it, and failover goes on", async () => {
    // Found from outside: the late answer ran the primary's "answering again" steps, and its chain id question
    // reached the provider that had asked for the pause.
    const asked: string[] = [];
    let answerSlow!: () => void;
    const slowAnswered = new Promise<void>((resolve) => {
      answerSlow = resolve;
    });
    const primary: Upstream = {
      label: "primary",
      async call(method) {
        asked.push(method);
        if (method === "eth_getBalance") {
          await slowAnswered;
          return result('"0x1"');
        }
        throw upstreamUnavailable("HTTP 503", undefined, 5);
      },
      async close() {},
    };
    const partner = scriptedUpstream();
    partner.state.down = false;
    const network = new Network({
      name: "ethereum",
      family: "eth",
      upstreams: [primary, { ...partner.upstream, label: "partner" }],
      timeoutMs: 10_000,
      breaker: { threshold: 5, cooldownMs: 50 },
      failover: { methods: ["eth_blockNumber"], plans: ["growth"] },
    });
    const mayFailOver = { idempotent: true, plan: "growth" as const };
    const slow = network.call("eth_getBalance", "[]");
    await expect(network.call("eth_chainId", "[]")).rejects.toMatchObject({ retryAfterSeconds: 5 });
    const askedBeforeAnswer = asked.length;
    answerSlow();
    await expect(slow).resolves.toBeDefined();
    await sleep(100);
    expect(network.primaryCircuit).toBe("open");
    await expect(network.call("eth_blockNumber", "[]", mayFailOver)).resolves.toBeDefined();
    expect(asked.slice(askedBeforeAnswer)).toEqual([]);
    await network.close();
  });
});

describe("a call's own deadline", () => {
  it("run out on a primary that answers other calls is the caller's limit: the call does not go to a partner with nothing left of it", async () => {
    // Found from outside: an eth_getLogs whose 10 s query deadline ran out on a slow primary was tried on the partner
    // with about 1 ms left; now and then the partner won, logged and counted as a failover with no outage.
    const primary = scriptedUpstream();
    primary.state.down = false;
    primary.upstream.call = async (method, _params, options) => {
      if (method !== "eth_getLogs") return result('"0x1"');
      await sleep(options.timeoutMs ?? 0);
      throw upstreamTimeout(options.timeoutMs ?? 0);
    };
    const partner = scriptedUpstream();
    const partnerAsked: string[] = [];
    partner.upstream.call = async (method) => {
      partnerAsked.push(method);
      return result(method === "eth_getLogs" ? "[]" : '"0x1"');
    };
    const network = new Network({
      name: "ethereum",
      family: "eth",
      upstreams: [primary.upstream, { ...partner.upstream, label: "partner" }],
      timeoutMs: 10_000,
      breaker: { threshold: 1, cooldownMs: 50 },
      failover: { methods: ["eth_getLogs"], plans: ["growth"] },
    });
    await expect(network.call("eth_getLogs", "[{}]", { idempotent: true, plan: "growth", timeoutMs: 100 })).rejects.toMatchObject({ message: "upstream timeout: no answer within 100 ms" });
    expect(partnerAsked).not.toContain("eth_getLogs");
    expect(network.failovers).toBe(0);
    expect(network.primaryCircuit).toBe("closed");
  });
});
