/**
 * deploy/kubernetes holds together: the ConfigMap's nodegate.yaml is a valid
 * configuration with the example Secret's values (every ${NAME} it reads is
 * in the Secret), the Deployment mounts it where it points nodegate, its
 * probes name endpoints nodegate serves on the port it listens on, the
 * grace period covers preStop plus the drain, and the Services reach the
 * container port. Then nodegate is started from that very configuration and
 * the probe paths answer as the kubelet needs, with Redis unreachable too.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { createApp } from "../../src/app.js";
import { applyConfigFile } from "../../src/config/yaml-file.js";
import { type Config } from "../../src/config/config.js";
import { loadConfig } from "../../src/config/load.js";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { servedMethodNames } from "../../src/methods/method-names.js";
import { createLogger } from "../../src/observability/log.js";
import type { NodegateServer } from "../../src/server.js";
import type { Stores } from "../../src/stores/create-stores.js";

const DIR = join(import.meta.dirname, "../../deploy/kubernetes");

// biome-ignore lint: manifests are untyped YAML
type Manifest = any;

function manifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(join(DIR, file), "utf8")).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`);
    return d.toJS();
  });
}

function find(kind: string, name: string): Manifest {
  for (const file of readdirSync(DIR).filter((f) => f.endsWith(".yaml"))) {
    for (const m of manifests(file)) if (m?.kind === kind && m.metadata?.name === name) return m;
  }
  throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
}

const configMap = find("ConfigMap", "nodegate-config");
const secret = find("Secret", "nodegate-secrets");
const deployment = find("Deployment", "nodegate");
const container = deployment.spec.template.spec.containers[0];
const configText: string = configMap.data["nodegate.yaml"];
const secretEnv: Record<string, string> = secret.stringData;

function configFromManifests(env: NodeJS.ProcessEnv): Config {
  const config = loadConfig({}, undefined);
  applyConfigFile(config, configText, "configmap nodegate.yaml", env, servedMethodNames());
  return config;
}

describe("deploy/kubernetes manifests", () => {
  it("lists only files that exist, and every manifest file but the example Secret", () => {
    const [kustomization] = manifests("kustomization.yaml");
    const files = readdirSync(DIR).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
    expect([...kustomization.resources].sort()).toEqual(files.filter((f) => f !== "secret.example.yaml").sort());
  });

  it("the ConfigMap's configuration is valid with the Secret's values, and reads only names the Secret has", () => {
    const config = configFromManifests(secretEnv);
    expect(config.networks[0]?.upstreams[0]?.url).toBe(secretEnv.UPSTREAM_URL);
    expect(config.keys?.map((k) => k.key)).toEqual([secretEnv.CLIENT_KEY_1, secretEnv.CLIENT_KEY_2]);
    expect(config.stores?.redisUrl).toBe(`redis://:${secretEnv.REDIS_PASSWORD}@nodegate-redis:6379/0`);
    const names = [...configText.matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1]);
    expect(names.filter((n) => !(n! in secretEnv))).toEqual([]);
    expect(config.warnings).toEqual([]);
  });

  it("the Deployment points nodegate at the mounted file and takes the Secret as environment", () => {
    const [, path] = container.args;
    const mount = container.volumeMounts.find((v: Manifest) => path.startsWith(`${v.mountPath}/`));
    const volume = deployment.spec.template.spec.volumes.find((v: Manifest) => v.name === mount.name);
    expect(volume.configMap.name).toBe("nodegate-config");
    expect(path.slice(mount.mountPath.length + 1) in configMap.data).toBe(true);
    expect(container.envFrom).toEqual([{ secretRef: { name: "nodegate-secrets" } }]);
  });

  it("probes name the port nodegate listens on, and the grace period covers preStop and the drain", () => {
    const config = configFromManifests(secretEnv);
    const port = container.ports.find((p: Manifest) => p.name === container.readinessProbe.httpGet.port);
    expect(port.containerPort).toBe(config.port);
    expect(container.livenessProbe.httpGet.port).toBe(port.name);
    expect(config.host).toBe("0.0.0.0");
    const preStopSeconds = Number(container.lifecycle.preStop.exec.command[1]);
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopSeconds * 1000 + config.drainMs);
  });

  it("the reply budget fits the container's memory limit with room for the process", () => {
    // Found from outside: the default budget (1 GiB) was above the 512Mi limit, and a replica under large answers
    // would have been killed for memory rather than refusing the answers that did not fit.
    const config = configFromManifests(secretEnv);
    const limit = /^(\d+)Mi$/.exec(container.resources.limits.memory);
    if (limit === null) throw new Error(`memory limit ${container.resources.limits.memory} is not in Mi`);
    const processRoomBytes = 200 * 1024 * 1024;
    // With Redis the cache is kept there, not in the process.
    expect(config.stores?.redisUrl).toBeDefined();
    expect(config.limits.maxReplyBytesInFlight + processRoomBytes).toBeLessThanOrEqual(Number(limit[1]) * 1024 * 1024);
  });

  it("the Services and the Redis URL reach what they name", () => {
    const portName = container.ports[0].name;
    for (const name of ["nodegate", "nodegate-headless"]) {
      const service = find("Service", name);
      expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
      expect(service.spec.ports[0].targetPort).toBe(portName);
    }
    const redisService = find("Service", "nodegate-redis");
    const redisUrl = new URL(configFromManifests(secretEnv).stores?.redisUrl as string);
    expect(redisUrl.hostname).toBe(redisService.metadata.name);
    expect(Number(redisUrl.port)).toBe(redisService.spec.ports[0].port);
  });
});

describe("nodegate started from the ConfigMap answers the probes", () => {
  let anvil: AnvilNode;
  let server: NodegateServer;
  let stores: Stores;
  let base: string;
  const logs: string[] = [];

  beforeAll(async () => {
    anvil = await startAnvil();
    const config = configFromManifests({ ...secretEnv, UPSTREAM_URL: anvil.url });
    // Nothing listens on port 1: Redis is unreachable, as when it restarts.
    config.stores = { ...config.stores, redisUrl: `redis://:${secretEnv.REDIS_PASSWORD}@127.0.0.1:1/0` };
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(chunk.toString());
        done();
      },
    });
    const app = createApp(config, createLogger("info", sink), config.keys ?? []);
    server = app.server;
    stores = app.stores;
    const address = await server.listen(0, "127.0.0.1");
    base = `http://127.0.0.1:${address.port}`;
  });
  afterAll(async () => {
    await server?.close(0);
    await anvil?.stop();
  });

  it("liveness and readiness are 200 with the upstream up, whether or not Redis answers", async () => {
    const redis = stores.redis;
    if (redis === undefined) throw new Error("the ConfigMap configures no Redis");
    if (redis.state !== "down") await new Promise<void>((resolve) => redis.onStateChange((s) => s === "down" && resolve()));
    const live = await fetch(`${base}${container.livenessProbe.httpGet.path}`);
    expect(live.status).toBe(200);
    const ready = await fetch(`${base}${container.readinessProbe.httpGet.path}`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, draining: false });
    const joined = logs.join("");
    expect(joined).toContain("redis unavailable");
    expect(joined).not.toContain(secretEnv.REDIS_PASSWORD);
  });

  it("the configured keys work on the native path", async () => {
    const res = await fetch(`${base}/v3/${secretEnv.CLIENT_KEY_1}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    expect(res.status).toBe(200);
    const direct = await fetch(anvil.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    });
    const [viaNodegate, fromNode] = (await Promise.all([res.json(), direct.json()])) as { result: string }[];
    expect(viaNodegate?.result).toBe(fromNode?.result);
  });
});
