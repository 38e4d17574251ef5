import { ethSpecialCodecs } from "../codec/eth-types.js";
import { CodecRegistry } from "../codec/message-codec.js";
import { starknetSpecialCodecs } from "../codec/starknet-types.js";
import { ethMethods } from "./eth-methods.js";
import { MethodTable } from "./method-table.js";
import { starknetMethods } from "./starknet-methods.js";

/** The codec registry of every chain family nodegate serves. */
export function createCodecRegistry(): CodecRegistry {
  return new CodecRegistry(new Map([...ethSpecialCodecs, ...starknetSpecialCodecs]));
}

/** Every method nodegate translates, compiled once at start. */
export function createMethodTable(registry: CodecRegistry = createCodecRegistry()): MethodTable {
  return new MethodTable(registry, [...ethMethods, ...starknetMethods]);
}
