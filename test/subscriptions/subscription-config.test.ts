/** The subscriptions section of the configuration file: defaults, overrides, and errors that name the field and line. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { ConfigError, DEFAULT_SUBSCRIPTIONS } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { testTempDir } from "../support/temp-dir.js";

function file(text: string): string {
  const path = join(testTempDir("nodegate-config-"), "nodegate.yaml");
  writeFileSync(path, text);
  return path;
}

const UPSTREAM = "networks:\n  - name: mainnet\n    upstreams:\n      - url: wss://node.example/ws\n";

it("defaults every setting, and a file overrides the ones it names", () => {
  expect(loadConfig({}, file(UPSTREAM)).subscriptions).toEqual(DEFAULT_SUBSCRIPTIONS);
  const config = loadConfig({}, file(`${UPSTREAM}subscriptions:\n  pollIntervalMs: 500\n  clientBufferSize: 100\n`));
  expect(config.subscriptions).toEqual({ ...DEFAULT_SUBSCRIPTIONS, pollIntervalMs: 500, clientBufferSize: 100 });
});

it.each([
  ["  pollMs: 5\n", /nodegate\.yaml:\d+:3: subscriptions\.pollMs: unknown setting \(known: pollIntervalMs, clientBufferSize/],
  ["  clientBufferSize: lots\n", /nodegate\.yaml:\d+:21: subscriptions\.clientBufferSize: want an integer from 1 to 10000000/],
  ["  reorgWindowBlocks: 0\n", /subscriptions\.reorgWindowBlocks: want an integer from 1/],
])("refuses %j, naming the field and its line", (line, message) => {
  expect(() => loadConfig({}, file(`${UPSTREAM}subscriptions:\n${line}`))).toThrow(ConfigError);
  expect(() => loadConfig({}, file(`${UPSTREAM}subscriptions:\n${line}`))).toThrow(message);
});
