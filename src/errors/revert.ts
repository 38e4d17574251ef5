/**
 * Reverts (JSON-RPC code 3): decodes the ABI-encoded revert data of
 * Error(string) and Panic(uint256), so the message says why even when the
 * node gave only the data, and typed callers get the reason and raw bytes.
 */
import { GatewayError } from "./gateway-error.js";

const ERROR_SELECTOR = "08c379a0";
const PANIC_SELECTOR = "4e487b71";

/** Solidity's panic codes (docs.soliditylang.org, "Panic via assert and Error via require"). */
const PANIC_REASONS = new Map<number, string>([
  [0x00, "generic compiler panic"],
  [0x01, "assert(false)"],
  [0x11, "arithmetic underflow or overflow"],
  [0x12, "division or modulo by zero"],
  [0x21, "enum overflow"],
  [0x22, "invalid encoded storage byte array accessed"],
  [0x31, "out-of-bounds array access; popping an empty array"],
  [0x32, "out-of-bounds access of an array or bytesN"],
  [0x41, "out of memory"],
  [0x51, "uninitialized function"],
]);

const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;
/** Nethermind writes "Reverted 0x…" in data. */
const NETHERMIND_DATA = /^Reverted (0x(?:[0-9a-fA-F]{2})*)$/;
/** How nodes other than geth's family say "reverted" with another code: Besu, Nethermind, OpenEthereum, Hardhat, Ganache. */
const REVERT_MESSAGE = /^(?:execution reverted|reverted|vm execution error|(?:error: )?vm exception while processing transaction: revert)/i;

function hexBytes(value: unknown): Uint8Array | undefined {
  if (typeof value !== "string") return undefined;
  const hex = HEX_BYTES.test(value) ? value : NETHERMIND_DATA.exec(value)?.[1];
  return hex === undefined ? undefined : Buffer.from(hex.slice(2), "hex");
}

/**
 * The revert bytes of a revert error, whichever client wrote it: error.data
 * as hex (geth, Erigon, Reth, Anvil, Besu), "Reverted 0x…" (Nethermind), or
 * an object holding them as data or result (Hardhat, Ganache). geth's
 * -32000 "execution reverted" without data is a revert with no bytes.
 * Undefined when the error is not a revert or its bytes are not known.
 */
export function revertData(err: GatewayError): Uint8Array | undefined {
  return revertBytes(err.code, err.message, err.data);
}

/** revertData for an error's parts: its code, message and data's JSON text. */
export function revertBytes(code: number, message: string, dataText: string | undefined): Uint8Array | undefined {
  if (code !== 3 && !REVERT_MESSAGE.test(message)) return undefined;
  if (dataText === undefined) return code !== 3 && /^execution reverted$/i.test(message) ? new Uint8Array(0) : undefined;
  let data: unknown;
  try {
    data = JSON.parse(dataText);
  } catch {
    return undefined;
  }
  if (typeof data === "object" && data !== null) {
    const nested = data as { data?: unknown; result?: unknown };
    return hexBytes(nested.data) ?? hexBytes(nested.result);
  }
  return hexBytes(data);
}

/** The reason encoded in revert data: the Error(string) text or the Panic description. */
export function decodeRevertReason(data: Uint8Array): string | undefined {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const selector = buf.toString("hex", 0, 4);
  try {
    if (selector === ERROR_SELECTOR && buf.length >= 4 + 64) {
      const offset = Number(BigInt(`0x${buf.toString("hex", 4, 36)}`));
      const start = 4 + offset;
      const length = Number(BigInt(`0x${buf.toString("hex", start, start + 32)}`));
      if (start + 32 + length > buf.length) return undefined;
      return buf.toString("utf8", start + 32, start + 32 + length);
    }
    if (selector === PANIC_SELECTOR && buf.length === 4 + 32) {
      const code = Number(BigInt(`0x${buf.toString("hex", 4, 36)}`));
      return PANIC_REASONS.get(code) ?? `panic code 0x${code.toString(16)}`;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/**
 * The reason a revert error carries: decoded from its data (`data`, when the
 * caller has it already), else taken from "execution reverted: <reason>" up to
 * the first control character. Anvil writes a custom error as "custom error
 * 0x<selector>: " and then its argument bytes as text (found from outside: a
 * Python client printed NUL bytes); the selector is the part a person reads,
 * and the bytes are in RevertError.data whole.
 */
export function revertReason(err: GatewayError, data = revertData(err)): string | undefined {
  const decoded = data ? decodeRevertReason(data) : undefined;
  if (decoded !== undefined) return decoded;
  const m = /^execution reverted: (.*)$/s.exec(err.message);
  if (m === null) return undefined;
  const text = m[1] as string;
  const binary = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.exec(text);
  if (binary === null) return text;
  const readable = text.slice(0, binary.index).replace(/[\s:]+$/, "");
  return readable === "" ? undefined : readable;
}

/**
 * A revert in the spec's form: code 3, "execution reverted: <reason>" (or
 * without the reason when the data encodes none), and the revert bytes as hex
 * data. geth's family writes it so, and a code 3 whose message lacks the
 * reason gets the decoded one. Other clients' reverts with bytes (Besu's
 * -32000 "Execution reverted", Nethermind's -32015 with data "Reverted 0x…",
 * Hardhat's and Ganache's objects) are restated in that form, so a legacy
 * caller reads every node's revert the same way (the node's own error is the
 * restated one's cause, never sent). geth's -32000 "execution reverted"
 * without data (a bare revert(), no bytes) stays as geth, and so the
 * provider, writes it.
 */
export function asSpecRevert(err: GatewayError): GatewayError {
  if (err.code !== 3) return err.origin === "upstream" ? inSpecForm(err) : err;
  if (err.message !== "execution reverted") return err;
  const data = revertData(err);
  const reason = data ? decodeRevertReason(data) : undefined;
  if (reason === undefined) return err;
  return new GatewayError({
    code: err.code,
    message: `execution reverted: ${reason}`,
    ...(err.data === undefined ? {} : { data: err.data }),
    ...(err.otherMembers === undefined ? {} : { otherMembers: err.otherMembers }),
    grpcCode: err.grpcCode,
    httpStatus: err.httpStatus,
    origin: err.origin,
  });
}

function inSpecForm(err: GatewayError): GatewayError {
  const data = revertData(err);
  if (data === undefined || data.length === 0) return err;
  const reason = decodeRevertReason(data);
  return new GatewayError({
    code: 3,
    message: reason === undefined ? "execution reverted" : `execution reverted: ${reason}`,
    data: `"0x${Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("hex")}"`,
    ...(err.otherMembers === undefined ? {} : { otherMembers: err.otherMembers }),
    grpcCode: err.grpcCode,
    httpStatus: err.httpStatus,
    origin: err.origin,
    cause: { code: err.code, message: err.message, data: err.data },
  });
}
