/**
 * Method names in the configuration that no call can match: a typo in a
 * key's method allowlist silently refuses the method it meant, one in
 * failover.methods silently keeps it on the primary. They are warnings, not
 * errors: a provider's allowlist may name methods nodegate does not forward
 * (calls to them get -32601 either way), and a shared file must not stop a
 * start over them.
 */

import { FAMILY_NAMES, familyWithArticle, methodFamily } from "../methods/method-family.js";
import { sentOnlyOnce, WRITE_METHODS } from "./config.js";

export interface MethodNameWarning {
  /** Where in the file, as the YAML reader's path. */
  path: (string | number)[];
  message: string;
}

/** The method lists to check, each with its place in the file. */
export interface MethodLists {
  allowlists: { path: (string | number)[]; methods: readonly string[] }[];
  failover: { path: (string | number)[]; methods: readonly string[] }[];
}

/** A network's failover policy, for the family check: its family, how many partners it has, the methods it names. */
export interface FailoverOfNetwork {
  path: (string | number)[];
  name: string;
  family: "eth" | "starknet";
  partners: number;
  methods: readonly string[];
  /** The policy is the default one (no failover.methods in the file). */
  byDefault: boolean;
}


/**
 * Failover policies that can never send a call to a partner: a method of the other family names no call of the
 * network, and a network with partners whose policy names none of its family's methods (the default names
 * eth_getBlockByHash, so a Starknet network's partners took no call, silently: found from outside).
 */
export function failoverFamilyWarnings(networks: readonly FailoverOfNetwork[]): MethodNameWarning[] {
  const warnings: MethodNameWarning[] = [];
  for (const n of networks) {
    if (!n.byDefault) {
      n.methods.forEach((method, k) => {
        const family = methodFamily(method);
        if (family !== n.family) warnings.push({ path: [...n.path, "methods", k], message: `${method} is ${familyWithArticle(family)} method; network ${n.name} serves ${FAMILY_NAMES[n.family]} methods, so no call matches it` });
      });
    }
    if (n.partners > 0 && !n.methods.some((method) => methodFamily(method) === n.family)) {
      const policy = n.byDefault ? `the default failover policy (${n.methods.join(", ")})` : "its failover.methods";
      warnings.push({
        path: n.byDefault ? n.path.slice(0, -1) : [...n.path, "methods"],
        message: `network ${n.name} has ${n.partners === 1 ? "a partner upstream" : `${n.partners} partner upstreams`}, but ${policy} names no ${FAMILY_NAMES[n.family]} method: no call fails over to ${n.partners === 1 ? "it" : "them"} (list the methods that may, in failover.methods)`,
      });
    }
  }
  return warnings;
}

/** The most edits apart a name may be from a known one to be suggested ("did you mean"). */
const SUGGEST_WITHIN = 3;

export function methodNameWarnings(lists: MethodLists, served: ReadonlySet<string>, passThrough: readonly string[]): MethodNameWarning[] {
  const callable = new Set([...served, ...passThrough]);
  const warnings: MethodNameWarning[] = [];
  const unknown = (name: string) => `${name} is neither a method nodegate translates nor in passThrough.methods, so no call matches it${suggestion(name, callable)}`;
  for (const list of lists.allowlists) {
    list.methods.forEach((name, k) => {
      if (name.endsWith("*") || callable.has(name)) return;
      warnings.push({ path: [...list.path, k], message: `${unknown(name)}; a call to it gets -32601 whatever this list says` });
    });
  }
  for (const list of lists.failover) {
    list.methods.forEach((name, k) => {
      if (name.endsWith("*")) warnings.push({ path: [...list.path, k], message: `failover.methods takes exact method names: ${name} matches no call` });
      else if (!callable.has(name)) warnings.push({ path: [...list.path, k], message: unknown(name) });
      else if (WRITE_METHODS.includes(name) || (!served.has(name) && sentOnlyOnce(name))) warnings.push({ path: [...list.path, k], message: `${name} is sent to one node once, never retried nor failed over` });
    });
  }
  return warnings;
}

function suggestion(name: string, known: ReadonlySet<string>): string {
  let best: string | undefined;
  let bestDistance = SUGGEST_WITHIN + 1;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase(), bestDistance);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best === undefined ? "" : ` (did you mean ${best}?)`;
}

/** Levenshtein distance, or `limit` once it is certain to be at least that. */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const d = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      row.push(d);
      if (d < rowMin) rowMin = d;
    }
    if (rowMin >= limit) return limit;
    previous = row;
  }
  return previous[b.length] as number;
}
