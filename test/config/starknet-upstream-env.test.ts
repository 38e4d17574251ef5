/**
 * The environment contract's Starknet variable: NODEGATE_STARKNET_UPSTREAM_URL
 * defines a network named "starknet" of the Starknet family, and nothing
 * else changes (ethereum stays the default network).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { startNodegate, type TestNodegate } from "../support/nodegate.js";
import { type StarknetFixtureUpstream, startStarknetFixtureUpstream } from "../support/starknet-fixture-upstream.js";
import { starknetFixture } from "../support/starknet-fixtures.js";

describe("NODEGATE_STARKNET_UPSTREAM_URL", () => {
  it("is optional: without it there is only the ethereum network", () => {
    const config = loadConfig({});
    expect(config.networks.map((n) => n.name)).toEqual(["ethereum"]);
  });

  it("defines the network starknet with that upstream, ethereum staying the default", () => {
    const url = "https://starknet-mainnet.example/v3/provider-key";
    const config = loadConfig({ NODEGATE_STARKNET_UPSTREAM_URL: url });
    expect(config.networks).toContainEqual({ name: "starknet", family: "starknet", upstreams: [{ label: "primary", url }] });
    expect(config.defaultNetwork).toBe("ethereum");
    expect(config.embeddedAnvil).toBe(true);
  });

  it.each([
    ["not a URL", "starknet-mainnet"],
    ["not http(s)", "wss://starknet-mainnet.example/ws/v3/provider-key"],
  ])("is refused when %s, naming the variable", (_name, value) => {
    expect(() => loadConfig({ NODEGATE_STARKNET_UPSTREAM_URL: value })).toThrow(ConfigError);
    expect(() => loadConfig({ NODEGATE_STARKNET_UPSTREAM_URL: value })).toThrow(/^NODEGATE_STARKNET_UPSTREAM_URL: /);
  });

  describe("served", () => {
    let upstream: StarknetFixtureUpstream;
    let ng: TestNodegate;

    beforeAll(async () => {
      upstream = await startStarknetFixtureUpstream();
      // The ethereum upstream is never called here; it only has to be a URL.
      const config = loadConfig({ NODEGATE_UPSTREAM_URL: "http://127.0.0.1:9", NODEGATE_STARKNET_UPSTREAM_URL: upstream.url });
      ng = await startNodegate({ upstreamUrl: "http://127.0.0.1:9", networks: config.networks });
    });
    afterAll(async () => {
      await ng?.close();
      await upstream?.close();
    });

    it("answers at /starknet/v3/<KEY>", async () => {
      const res = await fetch(`${ng.url}/starknet/v3/${ng.key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"starknet_getTransactionByBlockIdAndIndex","params":{"block_id":"latest","index":10}}',
      });
      expect(((await res.json()) as { result: unknown }).result).toEqual(starknetFixture("l1-handler").json);
    });
  });
});
