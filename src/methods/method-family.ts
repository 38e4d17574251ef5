/** The chain family a JSON-RPC method belongs to, by its namespace: pass-through methods and configured method names. */
import type { ChainFamily } from "./method-table.js";

/** Namespaces of Starknet nodes' methods: the spec's, and pathfinder's and juno's own; every other method is Ethereum's. */
const STARKNET_NAMESPACES = /^(?:starknet|pathfinder|juno)_/;

export function methodFamily(method: string): ChainFamily {
  return STARKNET_NAMESPACES.test(method) ? "starknet" : "eth";
}

/** Each family's name as messages write it. */
export const FAMILY_NAMES: Readonly<Record<ChainFamily, string>> = { eth: "Ethereum", starknet: "Starknet" };

/** "an Ethereum", "a Starknet". */
export function familyWithArticle(family: ChainFamily): string {
  const name = FAMILY_NAMES[family];
  return `${/^[AEIOU]/.test(name) ? "an" : "a"} ${name}`;
}
