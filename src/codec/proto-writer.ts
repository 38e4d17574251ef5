/**
 * Writes protobuf binary into one growing buffer: tags, varints, bytes, and
 * length-delimited fields whose length is only known once written (two bytes
 * are reserved for it; the content moves when the length needs more or fewer).
 */

/** Wire types (protobuf encoding). */
export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;

/** Bytes a length prefix is given before its content is known: enough for 16 KiB. */
const RESERVED = 2;

export class ProtoWriter {
  buf: Uint8Array;
  /** The same bytes, for writing two at a time. */
  view: DataView;
  pos: number;

  /** `start` bytes are left free at the front (room for a gRPC frame header). */
  constructor(capacity: number, start = 0) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, start + 64));
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.pos = start;
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength);
  }

  /** A non-negative integer below 2^53. */
  varint(n: number): void {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    while (n > 0x7f) {
      buf[pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    buf[pos++] = n;
    this.pos = pos;
  }

  /** A 64-bit unsigned integer given as its high and low 32 bits. */
  varint64(hi: number, lo: number): void {
    if (hi === 0) return this.varint(lo);
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    // First 28 bits from lo, then 4 from lo and 3 from hi, then the rest of hi.
    for (let i = 0; i < 4; i++) {
      buf[pos++] = (lo & 0x7f) | 0x80;
      lo >>>= 7;
    }
    const mid = (lo & 0x0f) | ((hi & 0x07) << 4);
    hi >>>= 3;
    if (hi === 0) {
      buf[pos++] = mid;
      this.pos = pos;
      return;
    }
    buf[pos++] = mid | 0x80;
    while (hi > 0x7f) {
      buf[pos++] = (hi & 0x7f) | 0x80;
      hi >>>= 7;
    }
    buf[pos++] = hi;
    this.pos = pos;
  }

  tag(fieldNumber: number, wireType: number): void {
    this.varint(fieldNumber * 8 + wireType);
  }

  double(value: number): void {
    this.ensure(8);
    this.view.setFloat64(this.pos, value, true);
    this.pos += 8;
  }

  bytes(src: Uint8Array, start: number, end: number): void {
    this.varint(end - start);
    this.ensure(end - start);
    this.buf.set(src.subarray(start, end), this.pos);
    this.pos += end - start;
  }

  /** Starts a length-delimited value; returns the mark endLength() needs. */
  beginLength(): number {
    this.ensure(RESERVED);
    this.pos += RESERVED;
    return this.pos;
  }

  endLength(mark: number): void {
    const length = this.pos - mark;
    const size = length < 0x80 ? 1 : length < 0x4000 ? 2 : length < 0x200000 ? 3 : length < 0x10000000 ? 4 : 5;
    if (size !== RESERVED) {
      this.ensure(size - RESERVED);
      this.buf.copyWithin(mark - RESERVED + size, mark, this.pos);
      this.pos += size - RESERVED;
    }
    let at = mark - RESERVED;
    let n = length;
    while (n > 0x7f) {
      this.buf[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    }
    this.buf[at] = n;
  }
}
