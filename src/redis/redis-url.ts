/**
 * Redis connection URLs: redis://[[user]:password@]host[:port][/db], and
 * rediss:// for TLS. Passwords are hidden whenever a URL is shown.
 */

export interface RedisEndpoint {
  host: string;
  port: number;
  tls: boolean;
  username: string | undefined;
  password: string | undefined;
  db: number;
}

/** Reads redis://[[user]:password@]host[:port][/db] (rediss:// for TLS). Throws with a reason. */
export function parseRedisUrl(value: string): RedisEndpoint {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error("not a URL");
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new Error("want a redis:// or rediss:// URL");
  if (!url.hostname) throw new Error("the URL has no host");
  const path = url.pathname.replace(/^\//, "");
  if (path !== "" && !/^\d{1,2}$/.test(path)) throw new Error(`want a database number after the host, got "/${path}"`);
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : 6379,
    tls: url.protocol === "rediss:",
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: path === "" ? 0 : Number(path),
  };
}

/** The URL without its password, for logs and errors. */
export function redactRedisUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password) url.password = "***";
    return url.toString();
  } catch {
    return "(invalid URL)";
  }
}
