/**
 * Configuration of the upstream transport: the URL scheme decides, the
 * environment names the URL, and reconnect delays back off within bounds.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { backoffDelay } from "../../src/upstream/backoff.js";

describe("upstream transport from the environment", () => {
  it("uses NODEGATE_UPSTREAM_WS_URL when set, in preference to NODEGATE_UPSTREAM_URL, and starts no Anvil", () => {
    const config = loadConfig({ NODEGATE_UPSTREAM_WS_URL: "wss://node.example/ws/v3/abc", NODEGATE_UPSTREAM_URL: "https://node.example/v3/abc" });
    expect(config.networks[0]?.upstreams).toEqual([{ label: "primary", url: "wss://node.example/ws/v3/abc" }]);
    expect(config.embeddedAnvil).toBe(false);
  });

  it("keeps NODEGATE_UPSTREAM_URL for http(s)", () => {
    const config = loadConfig({ NODEGATE_UPSTREAM_URL: "http://127.0.0.1:8545" });
    expect(config.networks[0]?.upstreams).toEqual([{ label: "primary", url: "http://127.0.0.1:8545" }]);
  });

  it("rejects a WebSocket variable that holds another scheme, and an HTTP variable that holds ws", () => {
    expect(() => loadConfig({ NODEGATE_UPSTREAM_WS_URL: "https://node.example" })).toThrow(ConfigError);
    expect(() => loadConfig({ NODEGATE_UPSTREAM_URL: "ws://node.example" })).toThrow(ConfigError);
    expect(() => loadConfig({ NODEGATE_UPSTREAM_WS_URL: "not a url" })).toThrow(/NODEGATE_UPSTREAM_WS_URL/);
  });

  it("selects the embedded Anvil's WebSocket endpoint with NODEGATE_UPSTREAM_TRANSPORT=ws, and refuses other values", () => {
    expect(loadConfig({}).embeddedTransport).toBe("http");
    expect(loadConfig({ NODEGATE_UPSTREAM_TRANSPORT: "ws" })).toMatchObject({ embeddedAnvil: true, embeddedTransport: "ws" });
    expect(() => loadConfig({ NODEGATE_UPSTREAM_TRANSPORT: "grpc" })).toThrow(/want http or ws/);
  });
});

describe("reconnect backoff", () => {
  const bounds = { minDelayMs: 100, maxDelayMs: 5_000 };

  it("doubles per attempt, between half and all of the step", () => {
    for (const [attempt, full] of [
      [0, 100],
      [1, 200],
      [3, 800],
    ] as const) {
      expect(backoffDelay(attempt, { ...bounds, random: () => 0 })).toBe(full / 2);
      expect(backoffDelay(attempt, { ...bounds, random: () => 0.999999 })).toBe(full);
    }
  });

  it("never exceeds the cap, however many attempts failed", () => {
    for (const attempt of [6, 10, 100, 10_000]) {
      expect(backoffDelay(attempt, { ...bounds, random: () => 0.999999 })).toBe(bounds.maxDelayMs);
      expect(backoffDelay(attempt, bounds)).toBeGreaterThanOrEqual(bounds.maxDelayMs / 2);
    }
  });
});
