/**
 * A real redis-server for one test file: a child process on a free port of
 * 127.0.0.1, no persistence, stopped (and restartable on the same port, as a
 * Redis that goes away and comes back) by the test.
 */
import { type ChildProcess, spawn } from "node:child_process";
import net, { type AddressInfo } from "node:net";
import tls from "node:tls";
import { requirePackages } from "./system-packages.js";

export const redisRequirement = requirePackages([["redis-server", "redis-server", ["--version"]]]);

export interface RedisServer {
  port: number;
  url: string;
  /** Stops the process; the port stays this server's for start(). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface RedisServerOptions {
  /** More redis-server options (--requirepass x). */
  args?: string[];
  /** Serve TLS only (rediss://), with these PEM files. */
  tls?: { certFile: string; keyFile: string };
}

function spawnRedis(port: number, options: RedisServerOptions): Promise<ChildProcess> {
  const listen = options.tls
    ? ["--port", "0", "--tls-port", String(port), "--tls-cert-file", options.tls.certFile, "--tls-key-file", options.tls.keyFile, "--tls-auth-clients", "no"]
    : ["--port", String(port)];
  const child = spawn(
    "redis-server",
    [...listen, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning", ...(options.args ?? [])],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  return new Promise((resolve, reject) => {
    let output = "";
    const deadline = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`redis-server did not start on port ${port}: ${output}`));
    }, 10_000);
    // With --loglevel warning nothing may be printed, so readiness is a PING that answers.
    const probe = setInterval(() => {
      const socket = options.tls ? tls.connect({ port, host: "127.0.0.1", rejectUnauthorized: false }) : net.connect(port, "127.0.0.1");
      socket.once(options.tls ? "secureConnect" : "connect", () => socket.write("PING\r\n"));
      socket.once("data", (data) => {
        socket.destroy();
        if (data.toString().startsWith("+PONG") || data.toString().startsWith("-NOAUTH")) {
          clearInterval(probe);
          clearTimeout(deadline);
          resolve(child);
        }
      });
      socket.once("error", () => socket.destroy());
    }, 20);
    const collect = (d: Buffer) => {
      output += d.toString();
    };
    child.stdout?.on("data", collect);
    child.stderr?.on("data", collect);
    child.once("exit", (code) => {
      clearInterval(probe);
      clearTimeout(deadline);
      reject(new Error(`redis-server exited with ${code}: ${output}`));
    });
  });
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  let child: ChildProcess | undefined = await spawnRedis(port, options);
  const stop = async () => {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.removeAllListeners("exit");
      running.once("exit", () => resolve());
      running.kill("SIGKILL");
    });
  };
  return {
    port,
    url: `${options.tls ? "rediss" : "redis"}://127.0.0.1:${port}`,
    stop,
    async start() {
      if (child !== undefined) return;
      child = await spawnRedis(port, options);
    },
  };
}
