/**
 * Per-key allowlists, the provider's rules: four types (methods, contract
 * addresses, origins, user agents); entries within a type are ORed, types are
 * ANDed; a type with no entries allows everything.
 */
import type { Allowlists } from "../config/config.js";

/** What a request looks like to the allowlists. */
export interface RequestFacts {
  origin: string | undefined;
  userAgent: string | undefined;
}

export interface CallFacts {
  method: string;
  /** The contract addresses the call names (lowercase 0x hex), or undefined for methods that take none. */
  addresses: string[] | undefined;
}

function methodAllowed(patterns: readonly string[], method: string): boolean {
  return patterns.some((p) => (p.endsWith("*") ? method.startsWith(p.slice(0, -1)) : p === method));
}

/**
 * An origin entry matches with or without a scheme ("https://app.example.com",
 * "app.example.com"); "*.example.com" matches any subdomain of example.com; a
 * path on the entry ("https://app.example.com/") is ignored, as browsers send
 * none. The key allowlists and cors.origins read entries alike.
 */
export function originAllowed(patterns: readonly string[], origin: string | undefined): boolean {
  if (origin === undefined) return false;
  let scheme = "";
  let host = origin.toLowerCase();
  const m = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/.exec(host);
  if (m) {
    scheme = m[1] as string;
    host = (m[2] as string).replace(/\/.*$/, "");
  }
  return patterns.some((raw) => {
    let pattern = raw.toLowerCase();
    const pm = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/.exec(pattern);
    if (pm) {
      if (pm[1] !== scheme) return false;
      pattern = pm[2] as string;
    }
    pattern = pattern.replace(/\/.*$/, "");
    if (pattern.startsWith("*.")) return host.endsWith(pattern.slice(1));
    return host === pattern;
  });
}

export function requestAllowed(allow: Allowlists | undefined, facts: RequestFacts): boolean {
  if (allow === undefined) return true;
  if (allow.origins?.length && !originAllowed(allow.origins, facts.origin)) return false;
  if (allow.userAgents?.length && !allow.userAgents.some((s) => facts.userAgent?.includes(s))) return false;
  return true;
}

export function callAllowed(allow: Allowlists | undefined, facts: CallFacts): boolean {
  if (allow === undefined) return true;
  if (allow.methods?.length && !methodAllowed(allow.methods, facts.method)) return false;
  if (allow.contractAddresses?.length && facts.addresses !== undefined) {
    // Every address the call names must be on the list; a call naming none (a creation) is not allowed.
    if (facts.addresses.length === 0) return false;
    const allowed = new Set(allow.contractAddresses.map((a) => a.toLowerCase()));
    if (!facts.addresses.every((a) => allowed.has(a))) return false;
  }
  return true;
}
