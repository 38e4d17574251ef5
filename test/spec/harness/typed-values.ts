/** Typed answers' values as the JSON-RPC text writes them, for comparing the two doors. */
import { bytesToHex, type Hex } from "viem";
import type { Uint256 } from "../../../gen/nodegate/eth/v1/primitives_pb.js";
import { bytesToBigint } from "../../../src/codec/hex.js";

/** A Uint256 field's number (0 when unset). */
export const u256 = (v: Uint256 | undefined): bigint => bytesToBigint(v?.value ?? new Uint8Array());

/** A bytes field as 0x-hex ("0x" when unset). */
export const hex = (b: Uint8Array | undefined): Hex => bytesToHex(b ?? new Uint8Array());
