/** The cache, coalescing and worker settings: defaults, the YAML file (the shipped example too), the environment, and bad values. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULT_CACHE } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { testTempDir } from "../support/temp-dir.js";

function file(text: string): string {
  const path = join(testTempDir("nodegate-cache-"), "nodegate.yaml");
  writeFileSync(path, text);
  return path;
}

function errorOf(load: () => unknown): string {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("cache and workers settings", () => {
  it("default to an in-process cache with coalescing, and one process", () => {
    const config = loadConfig({});
    expect(config.cache).toEqual(DEFAULT_CACHE);
    expect(config.cache?.maxBytes).toBe(256 * 1024 * 1024);
    expect(config.workers).toBe(1);
  });

  it("are read from the file, and the shipped example parses", () => {
    const config = loadConfig({}, file("cache:\n  maxBytes: 0\n  coalesce: false\n  coalesceWindowMs: 250\n  finalizedMaxAgeMs: 500\nworkers: 3\n"));
    expect(config.cache).toEqual({ maxBytes: 0, coalesce: false, coalesceWindowMs: 250, finalizedMaxAgeMs: 500 });
    expect(config.workers).toBe(3);
    const example = loadConfig(
      { PROVIDER_KEY: "pk", PARTNER_URL: "https://partner.example/rpc", CLIENT_KEY_1: "client-key-one", CLIENT_KEY_2: "client-key-two", CLIENT_SECRET_2: "s" },
      join(import.meta.dirname, "../../examples/nodegate.example.yaml"),
    );
    expect(example.cache).toEqual(DEFAULT_CACHE);
    expect(example.workers).toBe(1);
  });

  it("NODEGATE_WORKERS overrides the file", () => {
    expect(loadConfig({ NODEGATE_WORKERS: "2" }, file("workers: 4\n")).workers).toBe(2);
  });

  it("bad values name the setting and line", () => {
    expect(errorOf(() => loadConfig({}, file("cache:\n  maxBytes: -1\n")))).toMatch(/:2:\d+: cache\.maxBytes: want an integer/);
    expect(errorOf(() => loadConfig({}, file("cache:\n  coalesce: yes please\n")))).toMatch(/cache\.coalesce: want true or false/);
    expect(errorOf(() => loadConfig({}, file("cache:\n  coalesceWindowMs: 0\n")))).toMatch(/cache\.coalesceWindowMs: want an integer/);
    expect(errorOf(() => loadConfig({}, file("cache:\n  ttl: 5\n")))).toMatch(/cache\.ttl: unknown setting/);
    expect(errorOf(() => loadConfig({}, file("workers: 0\n")))).toMatch(/workers: want an integer from 1 to 256/);
    expect(errorOf(() => loadConfig({ NODEGATE_WORKERS: "lots" }))).toMatch(/NODEGATE_WORKERS: want a number of processes 1-256/);
    // Found from outside: Number() read "0x2" as 2 and "1e1" as 10 (NODEGATE_PORT already took digits only).
    for (const spelled of ["0x2", "1e1", " 2", "2.0"]) expect(errorOf(() => loadConfig({ NODEGATE_WORKERS: spelled }))).toMatch(/NODEGATE_WORKERS: want a number of processes 1-256/);
  });
});
