/**
 * PartnerChains on its own, with scripted upstreams: chain ids change behind
 * a URL (a node restarted on another chain), so they are asked again, and a
 * partner's verdict follows. Found from outside: a primary restarted as chain
 * 999 failed over to its chain-31337 partner, and a partner judged on another
 * chain at start stayed refused after the primary came back on its chain.
 */
import { describe, expect, it } from "vitest";
import { PartnerChains } from "../../src/upstream/partner-chains.js";
import type { Upstream } from "../../src/upstream/upstream.js";

/** An upstream whose eth_chainId answer is `chainId` (undefined: it fails), counting the questions. */
function scripted(label: string, chainId: string | undefined) {
  const node = {
    chainId,
    asked: 0,
    upstream: {
      label,
      async call(method: string) {
        expect(method).toBe("eth_chainId");
        node.asked++;
        if (node.chainId === undefined) throw new Error("unavailable");
        const body = Buffer.from(JSON.stringify(node.chainId));
        return { body, start: 0, end: body.length };
      },
      async close() {},
    } as unknown as Upstream,
  };
  return node;
}

interface Logged {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

function logger(into: Logged[]) {
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => void into.push({ level, msg, fields });
  return { info: at("info"), error: at("error"), warn: at("warn") } as never;
}

const settle = () => new Promise((r) => setTimeout(r, 5));

describe("PartnerChains", () => {
  it("asks chain ids again once they are maxAge old, while the primary answers calls; a partner's verdict follows, each change said once", async () => {
    const primary = scripted("primary", "0x7a69");
    const partner = scripted("partner", "0x7a69");
    const logs: Logged[] = [];
    const chains = new PartnerChains("ethereum", "eth", [primary.upstream, partner.upstream], logger(logs), 40);
    chains.learn();
    await settle();
    expect(chains.mayTakeCalls(1)).toBe(true);
    expect([primary.asked, partner.asked]).toEqual([1, 1]);

    // Before maxAge, calls ask nothing.
    chains.primaryAnswered();
    await settle();
    expect([primary.asked, partner.asked]).toEqual([1, 1]);

    // The primary restarted on chain 999: known after maxAge, once it answers a call.
    primary.chainId = "0x3e7";
    await new Promise((r) => setTimeout(r, 45));
    expect(chains.mayTakeCalls(1)).toBe(true); // the answer kept until asked again
    chains.primaryAnswered();
    await settle();
    expect([primary.asked, partner.asked]).toEqual([2, 2]);
    expect(chains.primaryChainId()).toBe("3e7");
    expect(chains.mayTakeCalls(1)).toBe(false);
    expect(chains.mayTakeCalls(1)).toBe(false);
    expect(logs.filter((l) => l.level === "error")).toEqual([
      { level: "error", msg: expect.stringMatching(/^a partner serves another chain than the primary's/), fields: expect.objectContaining({ upstream: "partner", primaryChainId: "0x3e7", partnerChainId: "0x7a69" }) },
    ]);

    // Back on the partner's chain: the partner takes failed-over calls again, and that is said.
    primary.chainId = "0x7a69";
    await new Promise((r) => setTimeout(r, 45));
    chains.primaryAnswered();
    await settle();
    expect(chains.mayTakeCalls(1)).toBe(true);
    expect(logs.filter((l) => l.level === "info").map((l) => l.msg)).toEqual(["a partner judged on another chain now serves the primary's: it takes failed-over calls again"]);
    expect(logs.filter((l) => l.level === "error")).toHaveLength(1);
  });

  it("a question asked again that fails keeps the answer known, and is not asked on every call after", async () => {
    const primary = scripted("primary", "0x7a69");
    const partner = scripted("partner", "0x5");
    const chains = new PartnerChains("ethereum", "eth", [primary.upstream, partner.upstream], undefined, 40);
    chains.learn();
    await settle();
    expect(chains.mayTakeCalls(1)).toBe(false);
    partner.chainId = undefined; // down now: its chain is still what it said
    await new Promise((r) => setTimeout(r, 45));
    for (let i = 0; i < 5; i++) chains.primaryAnswered();
    await settle();
    for (let i = 0; i < 5; i++) chains.primaryAnswered();
    await settle();
    expect(partner.asked).toBe(2);
    expect(chains.mayTakeCalls(1)).toBe(false);
  });

  it("forgetPrimary asks the primary at once, judges partners by its answer, and drops an answer to a question asked before it", async () => {
    const primary = scripted("primary", "0x7a69");
    const partner = scripted("partner", "0x7a69");
    const logs: Logged[] = [];
    const chains = new PartnerChains("ethereum", "eth", [primary.upstream, partner.upstream], logger(logs));
    chains.learn();
    await settle();
    expect(chains.mayTakeCalls(1)).toBe(true);

    // A question under way when the finality went back: its answer (the chain before) is not taken.
    let release: (() => void) | undefined;
    const slowCall = primary.upstream.call.bind(primary.upstream);
    let first = true;
    (primary.upstream as { call: Upstream["call"] }).call = async (method, params, options) => {
      if (first) {
        first = false;
        const answer = await slowCall(method, params, options);
        await new Promise<void>((r) => (release = r));
        return answer;
      }
      return slowCall(method, params, options);
    };
    chains.forgetPrimary();
    await settle();
    expect(chains.primaryChainId()).toBeUndefined();
    primary.chainId = "0x3e7";
    chains.forgetPrimary();
    await settle();
    release?.();
    await settle();
    expect(chains.primaryChainId()).toBe("3e7");
    expect(chains.mayTakeCalls(1)).toBe(false);
    expect(primary.asked).toBe(3);
  });

  it("a primary forgotten and not answering yet lets partners through unchecked, as at start", async () => {
    const primary = scripted("primary", "0x7a69");
    const partner = scripted("partner", "0x5");
    const chains = new PartnerChains("ethereum", "eth", [primary.upstream, partner.upstream], undefined);
    chains.learn();
    await settle();
    expect(chains.mayTakeCalls(1)).toBe(false);
    primary.chainId = undefined;
    chains.forgetPrimary();
    await settle();
    expect(chains.mayTakeCalls(1)).toBe(true);
  });
});
