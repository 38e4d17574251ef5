/**
 * The secret parts of the upstream URLs (a provider's key in its path, user info, query values), and what removes
 * them from the texts nodegate writes. nodegate never writes an upstream's URL itself, but a node may quote it: an
 * error such as "invalid project id /v3/<KEY>", a reply id or a malformed reply that echoes the request line. Such
 * text travels in error messages (GatewayError) and log lines, which both pass through `withoutSecrets`.
 */

/** Path segments that name an API version or a route, not a key (kept in the banner too: upstream.ts). */
export const KEPT_PATH_SEGMENT = /^(v\d+(?:[._]\d+)*|ws|rpc|ext|bc)$/i;

/** Shorter texts are not secrets worth the name, and would match words in messages by chance. */
const MIN_SECRET_LENGTH = 8;

const REDACTED = "<redacted>";

let secrets: string[] = [];
/** Every secret, longest first, in any case: a node may quote its request line upper-cased (found from outside). */
let secretPattern: RegExp | undefined;

/**
 * What of `url` must never be written: user info and query values, and every path segment that could be a key (not a
 * version-like word; one of at least 16 characters, or of 8 with a letter and a digit, as keys and tokens are), each
 * as written in the URL and decoded.
 */
export function secretPartsOfUrl(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [];
  }
  const found = new Set<string>();
  const add = (part: string) => {
    for (const form of [part, decoded(part)]) {
      if (form.length < MIN_SECRET_LENGTH) continue;
      found.add(form);
      // As a node's JSON error data quotes it: `"` and `\` escaped, and non-ASCII as \uXXXX (Python's json.dumps).
      const escaped = JSON.stringify(form).slice(1, -1);
      found.add(escaped);
      found.add(escaped.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`));
    }
  };
  add(u.username);
  add(u.password);
  // The Basic authorization nodegate makes of user info: a node echoing its request's headers quotes it (found from
  // outside). Shorter user info stays as it is: cut out of every text, a 6-character password corrupted revert data
  // holding its digits, and callers could test guesses by having it echoed back.
  if (u.username !== "" || u.password !== "") {
    const pair = `${decoded(u.username)}:${decoded(u.password)}`;
    add(pair);
    found.add(Buffer.from(pair).toString("base64"));
  }
  for (const value of u.searchParams.values()) add(value);
  for (const pair of u.search.slice(1).split("&")) add(pair.slice(pair.indexOf("=") + 1));
  for (const segment of u.pathname.split("/")) {
    if (KEPT_PATH_SEGMENT.test(segment)) continue;
    if (segment.length >= 16 || (segment.length >= MIN_SECRET_LENGTH && /\d/.test(segment) && /[a-z]/i.test(segment))) add(segment);
  }
  return [...found];
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Adds the secret parts of an upstream's URL to what `withoutSecrets` removes (for the life of the process). */
export function keepSecretsOf(url: string): void {
  const added = secretPartsOfUrl(url).filter((part) => !secrets.includes(part));
  // Longest first, so that a secret holding another is removed whole.
  if (added.length === 0) return;
  secrets = [...secrets, ...added].sort((a, b) => b.length - a.length);
  secretPattern = new RegExp(secrets.map((secret) => secret.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "gi");
}

/** `text` with every secret part of an upstream URL, in whatever case, replaced by "<redacted>". */
export function withoutSecrets(text: string): string {
  return secretPattern === undefined ? text : text.replace(secretPattern, REDACTED);
}

/**
 * `withoutSecrets` for JSON text a node wrote (an error's `data`, its other members): a node's JSON encoder may escape
 * characters inside a secret (`\u002B` for `+` in .NET's default encoder, `\/` in PHP's, or any `\uXXXX`), which the
 * caller's parser decodes back into the secret. When the text holds an escape, the secrets are also looked for in its
 * re-serialised form (JSON.stringify writes no such escapes), and that form, redacted, is used when one is found.
 */
export function withoutSecretsInJson(text: string): string {
  const redacted = withoutSecrets(text);
  if (secretPattern === undefined || !redacted.includes("\\")) return redacted;
  let normal: string;
  try {
    normal = JSON.stringify(JSON.parse(redacted));
  } catch {
    return redacted;
  }
  const normalRedacted = withoutSecrets(normal);
  return normalRedacted === normal ? redacted : normalRedacted;
}

/** `withoutSecretsInJson` for an error's other members, `,"k":v` each: judged as the object they make. */
export function withoutSecretsInJsonMembers(members: string): string {
  if (!members.startsWith(",")) return withoutSecrets(members);
  return `,${withoutSecretsInJson(`{${members.slice(1)}}`).slice(1, -1)}`;
}
