/**
 * The `stores` settings and NODEGATE_REDIS_URL: a Redis URL (with its
 * password from the environment), key prefix and timeout; bad values are
 * refused naming the field and line, without echoing the password.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { testTempDir } from "../support/temp-dir.js";

function file(text: string): string {
  const path = join(testTempDir("nodegate-stores-"), "nodegate.yaml");
  writeFileSync(path, text);
  return path;
}

function errorOf(run: () => unknown): string {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error("expected a ConfigError");
}

describe("stores settings", () => {
  it("reads the Redis URL, key prefix and timeout", () => {
    const path = file('stores:\n  redisUrl: "redis://:${REDIS_PASSWORD}@redis:6379/1"\n  keyPrefix: "eu-1:"\n  timeoutMs: 250\n');
    const config = loadConfig({ REDIS_PASSWORD: "pw" }, path);
    expect(config.stores).toEqual({ redisUrl: "redis://:pw@redis:6379/1", keyPrefix: "eu-1:", timeoutMs: 250 });
  });

  it("keeps stores in process when nothing is set", () => {
    expect(loadConfig({}, undefined).stores).toBeUndefined();
  });

  it("refuses a URL that is not Redis's, naming the field and line", () => {
    const path = file("log:\n  level: info\nstores:\n  redisUrl: http://redis:6379\n");
    expect(errorOf(() => loadConfig({}, path))).toBe(`${path}:4:13: stores.redisUrl: want a redis:// or rediss:// URL`);
  });

  it("refuses an unknown setting and a timeout out of range", () => {
    expect(errorOf(() => loadConfig({}, file("stores:\n  redis: redis://x\n")))).toMatch(/stores.redis: unknown setting \(known: redisUrl, keyPrefix, timeoutMs\)/);
    expect(errorOf(() => loadConfig({}, file("stores:\n  timeoutMs: 0\n")))).toMatch(/stores.timeoutMs: want an integer from 1 to 60000/);
  });

  it("NODEGATE_REDIS_URL overrides the file's URL and keeps its other settings", () => {
    const path = file('stores:\n  redisUrl: redis://file:6379\n  keyPrefix: "p:"\n');
    expect(loadConfig({ NODEGATE_REDIS_URL: "redis://env:6380" }, path).stores).toEqual({ redisUrl: "redis://env:6380", keyPrefix: "p:" });
    expect(loadConfig({ NODEGATE_REDIS_URL: "rediss://env:6380" }, undefined).stores).toEqual({ redisUrl: "rediss://env:6380" });
  });

  it("a bad NODEGATE_REDIS_URL is refused without showing its password", () => {
    const message = errorOf(() => loadConfig({ NODEGATE_REDIS_URL: "redis://:topsecret@cache/not-a-db" }, undefined));
    expect(message).toBe('NODEGATE_REDIS_URL: want a database number after the host, got "/not-a-db"');
    expect(message).not.toContain("topsecret");
  });
});
