/**
 * Redis connection URLs: redis://[[user]:password@]host[:port][/db][?db=N], and
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

/**
 * Reads redis://[[user]:password@]host[:port][/db][?db=N] (rediss:// for TLS). Throws with a reason: a setting nodegate
 * would not use (another query parameter, a user with no password) is refused rather than dropped unseen (found from
 * outside: ?db=3 was ignored, database 0 used, and redis://alice@host sent no AUTH).
 */
export function parseRedisUrl(value: string): RedisEndpoint {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    const port = /^rediss?:\/\/(?:[^@/]*@)?[^:/?#]*:(\d+)/.exec(value)?.[1];
    if (port !== undefined && Number(port) > 65535) throw new Error(`not a URL: port ${port} is out of range`);
    throw new Error("not a URL (a password holding characters such as # / ? @ : must be percent-encoded, # as %23)");
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") throw new Error("want a redis:// or rediss:// URL");
  if (!url.hostname) throw new Error("the URL has no host");
  const path = url.pathname.replace(/^\//, "");
  if (path !== "" && !/^\d{1,2}$/.test(path)) throw new Error(`want a database number after the host, got ${quoted(`/${path}`)}`);
  for (const name of url.searchParams.keys()) if (name !== "db") throw new Error(`unknown query parameter ${quoted(name)} (known: db)`);
  const dbParam = url.searchParams.get("db");
  if (dbParam !== null && !/^\d{1,2}$/.test(dbParam)) throw new Error(`want a database number in ?db=, got ${quoted(dbParam)}`);
  if (dbParam !== null && path !== "" && dbParam !== path) throw new Error(`two database numbers: "/${path}" and "?db=${dbParam}"`);
  if (url.username && !url.password) throw new Error("a user with no password: give redis://user:password@host, or redis://:password@host for a password alone");
  const db = dbParam ?? path;
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port ? Number(url.port) : 6379,
    tls: url.protocol === "rediss:",
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: db === "" ? 0 : Number(db),
  };
}

/**
 * A piece of the URL, quoted in an error only when it looks like a setting
 * mistyped: a password holding an unencoded / or ? lands in the path or the
 * query, and was quoted there (found from outside).
 */
function quoted(piece: string): string {
  return /^\/?[\w.-]{1,24}$/.test(piece) ? `"${piece}"` : "something else (a password holding characters such as # / ? @ : must be percent-encoded, # as %23)";
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
