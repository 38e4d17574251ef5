/**
 * A method's result, derived from its response message: field 1 holds the
 * JSON-RPC result, and an unset field 1 is a null result (a successful call).
 */
import { create, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { CodecError, locate } from "../codec/codec-error.js";
import type { CodecRegistry, ValueCodec } from "../codec/message-codec.js";

export class ResultCodec<M extends Message = Message> {
  readonly #schema: DescMessage;
  readonly #field: DescField;
  readonly #codec: ValueCodec;
  readonly #list: boolean;

  constructor(registry: CodecRegistry, schema: DescMessage) {
    const field = schema.fields[0];
    if (field === undefined || field.number !== 1) throw new Error(`${schema.typeName}: the result must be field 1`);
    this.#schema = schema;
    this.#field = field;
    this.#codec = registry.field(field);
    this.#list = field.fieldKind === "list";
  }

  /** Parsed JSON result -> response message. Throws CodecError naming the bad field. */
  decode(json: unknown): M {
    const response = create(this.#schema) as unknown as Record<string, unknown>;
    if (json === null || json === undefined) return response as unknown as M;
    try {
      if (this.#list) {
        if (!Array.isArray(json)) throw new CodecError("", "want an array");
        const out = new Array<unknown>(json.length);
        for (let i = 0; i < json.length; i++) {
          try {
            out[i] = this.#codec.decode(json[i]);
          } catch (err) {
            throw locate(err, `[${i}]`);
          }
        }
        response[this.#field.localName] = out;
      } else {
        response[this.#field.localName] = this.#codec.decode(json);
      }
    } catch (err) {
      throw locate(err, "result");
    }
    return response as unknown as M;
  }

  /** Response message -> JSON result text ("null" when the result field is unset). */
  encode(response: M): string {
    const value = (response as unknown as Record<string, unknown>)[this.#field.localName];
    if (this.#list) return `[${(value as unknown[]).map((v) => this.#codec.encode(v)).join(",")}]`;
    return value === undefined ? "null" : this.#codec.encode(value);
  }
}

