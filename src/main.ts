/**
 * Process entry. With no upstream configured it starts a local Anvil node
 * and a development key, and prints how to call nodegate.
 */
import cluster from "node:cluster";
import { randomBytes } from "node:crypto";
import { createApp } from "./app.js";
import { banner } from "./banner.js";
import { configTextFromPrimary, forkWorkers, WorkersNotStarted } from "./cluster.js";
import { type Config, ConfigError } from "./config/config.js";
import { loadConfig, readConfigText } from "./config/load.js";
import { type AnvilNode, startAnvil } from "./embedded/anvil.js";
import { sendFinalTotals } from "./observability/cluster-metrics.js";
import { createLogger, flushLogs } from "./observability/log.js";

const HELP = `nodegate: typed gRPC/Connect and native JSON-RPC access to blockchain nodes

Usage:
  nodegate [--config FILE]        start the service (no upstream configured: a local Anvil node)
  nodegate check-config FILE      validate a configuration file and exit (0: valid, 2: invalid)
  nodegate --help                 this text

Environment (overrides the file):
  NODEGATE_CONFIG                 configuration file (same as --config)
  NODEGATE_UPSTREAM_URL           http(s) URL of the default network's upstream
  NODEGATE_UPSTREAM_WS_URL        ws(s) URL of the default network's upstream
  NODEGATE_UPSTREAM_TRANSPORT     http or ws: which endpoint of the embedded Anvil to use
  NODEGATE_STARKNET_UPSTREAM_URL  http(s) URL of a Starknet node (network "starknet")
  NODEGATE_PORT, NODEGATE_HOST    listen address (default 127.0.0.1:8080)
  NODEGATE_API_KEYS               comma-separated keys, each optionally key:plan (core, growth, custom)
  NODEGATE_LOG_LEVEL              pino level (default info)
  NODEGATE_REDIS_URL              redis:// URL: share rate-limit counters and the cache between instances
  NODEGATE_WORKERS                worker processes sharing the port (default 1)

See README.md and examples/nodegate.example.yaml.
`;

function fail(message: string, code = 2): never {
  process.stderr.write(`nodegate: ${message}\n`);
  process.exit(code);
}

/** `read()`, or exit 2 with its message when it fails on the configuration. */
function orExit<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

function loadOrExit(configPath: string | undefined, text?: string): Config {
  return orExit(() => loadConfig(process.env, configPath, text));
}

/**
 * The signals that stop nodegate gracefully. SIGHUP too (a closed terminal):
 * by Node's default it ended the process at once, and the embedded Anvil, in
 * a process group of its own, was left running (found from outside).
 */
const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * SIGINT/SIGTERM/SIGHUP while starting: remembered, and acted on once what has
 * started can be stopped (found from outside: a SIGTERM while the workers
 * started left the embedded Anvil running, re-parented to PID 1).
 */
function signalsWhileStarting(): { readonly received: string | undefined; release(): void } {
  let received: string | undefined;
  const remember = (signal: string) => {
    received ??= signal;
  };
  for (const signal of STOP_SIGNALS) process.on(signal, remember);
  return {
    get received() {
      return received;
    },
    release() {
      for (const signal of STOP_SIGNALS) process.off(signal, remember);
    },
  };
}

/** A worker starting holds nothing to stop (no node of its own): a signal then ends it at once, as Node does by default. */
const NOT_CAUGHT_WHILE_STARTING = { received: undefined, release: () => {} } as const;

async function start(configPathArg: string | undefined): Promise<void> {
  const early = cluster.isWorker ? NOT_CAUGHT_WHILE_STARTING : signalsWhileStarting();
  const configPath = configPathArg ?? process.env.NODEGATE_CONFIG;
  // A worker takes the file's text as its primary read and checked it: a worker started later (one replacing a worker
  // that died) serves as its siblings do, however the file has changed since (found from outside: settings differed
  // between workers, and a file broken since the start made every replacement fail, one fork after another).
  const configText =
    configPath === undefined || configPath === "" ? undefined : cluster.isWorker ? await configTextFromPrimary() : orExit(() => readConfigText(configPath));
  const config = loadOrExit(configPath, configText);
  const log = createLogger(config.logLevel);
  // Once per deployment: the primary (or the single process) says it, not each worker again.
  if (cluster.isPrimary) for (const warning of config.warnings) log.warn(warning);
  if ((config.workers ?? 1) > 1 && cluster.isPrimary) {
    await runPrimary(config, configText, early);
    return;
  }
  let anvil: AnvilNode | undefined;
  if (config.embeddedAnvil) {
    anvil = await startAnvil({ ownProcessGroup: true });
    if (early.received !== undefined) {
      await anvil.stop();
      process.exit(0);
    }
    const eth = config.networks.find((n) => n.name === config.defaultNetwork);
    if (eth) eth.upstreams = [{ label: "anvil", url: config.embeddedTransport === "ws" ? anvil.wsUrl : anvil.url }];
  }
  const generatedKey = config.keys === undefined;
  // The development key is on the growth plan so partner failover can be tried.
  const keys = config.keys ?? [{ key: randomBytes(16).toString("hex"), plan: "growth" as const }];
  let server;
  let address;
  try {
    const app = createApp(config, log, keys);
    server = app.server;
    address = await server.listen(config.port, config.host);
    app.learnFinality();
    app.learnChainIds();
  } catch (err) {
    // A port in use (or any start failure) must not leave the embedded node running behind it.
    await anvil?.stop();
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && (err as { syscall?: unknown }).syscall !== undefined) {
      // Found from outside: the line did not say how to pick another address.
      const hint = code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL" ? " (choose another with NODEGATE_PORT / NODEGATE_HOST, or listen.port / listen.host in the configuration file)" : "";
      fail(`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}${hint}`, 1);
    }
    throw err;
  }
  // A configured key is a secret, and stdout ends up in log stores: only a key generated for this run is shown.
  const shownKey = generatedKey ? (keys[0] as { key: string }).key : "<KEY>";
  // Workers share the primary's port; the primary prints the banner.
  if (cluster.isPrimary) process.stdout.write(banner(config, config.host, address.port, shownKey, generatedKey, anvil));

  let stopping = false;
  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, inFlight: server.inFlight, drainMs: config.drainMs }, "shutting down: draining in-flight requests");
    await server.close(config.drainMs);
    await anvil?.stop();
    // A worker's counts since the last scrape stay in the group's /metrics sums.
    await sendFinalTotals();
    log.info("stopped");
    await flushLogs(log);
    process.exit(exitCode);
  };
  // The embedded node is this service's only node, and a new one would be another chain: with it gone nodegate says
  // so and stops (found from outside: it went on answering "calls are paused" with nothing naming the cause).
  anvil?.onUnexpectedExit((how) => {
    log.error({ how }, "the embedded Anvil exited: stopping, as there is no node to serve; start nodegate again");
    void stop("embedded Anvil exited", 1);
  });
  // Handlers first: a signal still pending when the last listener goes is lost (Node closes the signal's handle), and
  // one may have come during the synchronous start above (found from outside: a SIGTERM as the port opened, 12 of 12).
  for (const signal of STOP_SIGNALS) process.on(signal, () => void stop(signal));
  early.release();
  if (early.received !== undefined) void stop(early.received);
  // A worker whose primary is gone has no one to hand it connections: it drains what it holds and stops. Node's
  // cluster ends such a worker at once (found from outside: in-flight calls cut, WebSockets 1006) unless the
  // disconnect counts as asked for, which is decided right after this event.
  const worker = cluster.worker;
  worker?.on("disconnect", () => {
    worker.exitedAfterDisconnect = true;
    void stop("disconnect");
  });
}

/** How long past drainMs a stopping worker may take to close before it is killed. */
const WORKER_EXIT_MARGIN_MS = 3000;

/**
 * NODEGATE_WORKERS > 1: this process prepares what the workers must share
 * (the embedded Anvil, a generated development key), forks the workers onto
 * one port, and stops them on SIGINT/SIGTERM.
 */
async function runPrimary(config: Config, configText: string | undefined, early: ReturnType<typeof signalsWhileStarting>): Promise<void> {
  const workers = config.workers ?? 1;
  const anvil = config.embeddedAnvil ? await startAnvil({ ownProcessGroup: true }) : undefined;
  const generatedKey = config.keys === undefined;
  const key = generatedKey ? randomBytes(16).toString("hex") : (config.keys?.[0] as { key: string }).key;
  const env: Record<string, string> = {};
  // As a single process does (NODEGATE_UPSTREAM_TRANSPORT): the embedded node over HTTP or over its WebSocket.
  if (anvil !== undefined && config.embeddedTransport === "ws") env.NODEGATE_UPSTREAM_WS_URL = anvil.wsUrl;
  else if (anvil !== undefined) env.NODEGATE_UPSTREAM_URL = anvil.url;
  if (generatedKey) env.NODEGATE_API_KEYS = `${key}:growth`;
  // Each worker drains for up to drainMs, as a single process does; the margin covers closing after the drain.
  const graceMs = config.drainMs + WORKER_EXIT_MARGIN_MS;
  const killedMessage = `nodegate: a worker still running ${graceMs} ms after SIGTERM was killed\n`;
  // A signal while the workers start stops those started so far, as a signal once they all listen does: each drains
  // what it was handed (or, still starting, ends at once), and the primary exits after the last, 0 or 1 as stop() below.
  const starting = new AbortController();
  const stopStarting = () => starting.abort();
  if (early.received === undefined) {
    for (const signal of STOP_SIGNALS) process.once(signal, stopStarting);
  } else {
    starting.abort();
  }
  let pool;
  try {
    pool = await forkWorkers(workers, env, configText, { graceMs, signal: starting.signal });
  } catch (err) {
    const clean = !(err instanceof WorkersNotStarted) || err.clean;
    if (!clean) process.stderr.write(killedMessage);
    await anvil?.stop();
    if (err instanceof WorkersNotStarted && err.aborted) process.exit(clean ? 0 : 1);
    // As in a single process: say why in one line, and leave no embedded node behind.
    fail(`${(err as Error).message} (its own message is above)`, 1);
  }
  let stopping = false;
  const stop = async (exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    const clean = await pool.stop(graceMs);
    if (!clean) process.stderr.write(killedMessage);
    await anvil?.stop();
    process.exit(clean ? exitCode : 1);
  };
  // As in a single process: with the embedded node gone there is nothing to serve.
  anvil?.onUnexpectedExit((how) => {
    process.stderr.write(`nodegate: the embedded Anvil exited (${how}): stopping, as there is no node to serve; start nodegate again\n`);
    void stop(1);
  });
  // Handlers before the others go, as in a single process: a signal pending as the last listener goes is lost.
  for (const signal of STOP_SIGNALS) process.on(signal, () => void stop());
  for (const signal of STOP_SIGNALS) process.off(signal, stopStarting);
  early.release();
  process.stdout.write(banner(config, config.host, pool.address.port, generatedKey ? key : "<KEY>", generatedKey, anvil));
  const sharing = config.stores?.redisUrl === undefined ? "caches and rate-limit counters are per worker" : "caches and rate-limit counters shared through Redis";
  process.stdout.write(`  workers:           ${workers} processes on this port (${sharing})\n\n`);
  if (early.received !== undefined) void stop();
}

export async function main(argv: string[]): Promise<void> {
  const [first, second, extra] = argv;
  // Found from outside: "--config f.yaml --port 9999" started on the file's port, saying nothing of --port.
  if (extra !== undefined && (first === "check-config" || first === "--config")) fail(`unknown argument ${extra}; see nodegate --help`);
  if (first === "--help" || first === "-h" || first === "help") {
    process.stdout.write(HELP);
    return;
  }
  if (first === "check-config") {
    if (!second) fail("check-config needs a FILE");
    const config = loadOrExit(second);
    const keys = config.keys?.length ?? 0;
    for (const warning of config.warnings) process.stderr.write(`nodegate: warning: ${warning}\n`);
    // Said as a start would do it (found from outside: "0 upstreams; 0 keys" where a start runs Anvil and makes a key).
    const upstreams = (n: { upstreams: unknown[] }) =>
      config.embeddedAnvil && n.upstreams.length === 0 ? "the embedded Anvil" : `${n.upstreams.length} upstream${n.upstreams.length === 1 ? "" : "s"}`;
    const keyText = config.keys === undefined ? "no keys: a development key is made at start" : `${keys} key${keys === 1 ? "" : "s"}`;
    process.stdout.write(
      `${second}: valid (${config.networks.length} network${config.networks.length === 1 ? "" : "s"}: ${config.networks.map((n) => `${n.name} [${n.family}, ${upstreams(n)}]`).join(", ")}; ${keyText}; listen ${config.host}:${config.port}${config.tls === undefined ? "" : " (TLS)"})\n`,
    );
    return;
  }
  if (first === "--config") {
    if (!second) fail("--config needs a FILE");
    return start(second);
  }
  if (first !== undefined) fail(`unknown argument ${first}; see nodegate --help`);
  return start(undefined);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`nodegate: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
