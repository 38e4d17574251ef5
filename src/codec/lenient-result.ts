/**
 * Reads a node's result as the value it spells when the spelling is not
 * canonical: quantities with leading zeros ("0x01"; Nethermind once padded
 * signatures, Tron its nonces, SKALE still does), data with an odd digit
 * count ("0x0" as a block nonce: Nethermind, Ethermint, early Hedera), an
 * upper-case "0X", and a quantity written as a whole JSON number (exact
 * below 2^53). The strict codecs refuse these, and one such field used
 * to make the typed door refuse the whole answer (-32053) while the native
 * door forwarded it. A result the strict reading refuses is read once more
 * with the hex decoders lenient (hex.ts readingLeniently), which re-spells
 * every such value in the same pass: a block of padded signatures costs two
 * readings, not one per value. A block nonce written short ("0x0") is padded
 * to its 8 bytes. Anything else still fails, naming the field.
 */
import { CodecError } from "./codec-error.js";
import { readingLeniently } from "./hex.js";

/** `decode(json)`, or, when its strict reading fails, `decode(json)` reading non-canonical hex as its value. */
export function decodeRespelling<T>(decode: (json: unknown) => T, json: unknown): T {
  try {
    return decode(json);
  } catch (err) {
    if (!(err instanceof CodecError)) throw err;
    return readingLeniently(() => decode(json));
  }
}
