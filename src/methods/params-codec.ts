/**
 * A method's params, derived from its request message: the request's fields
 * in field-number order are the JSON-RPC positional params (or, for methods
 * that take named params, keys named after the fields).
 */
import { create, type DescField, type DescMessage, type Message } from "@bufbuild/protobuf";
import { CodecError, locate } from "../codec/codec-error.js";
import type { CodecRegistry, ValueCodec } from "../codec/message-codec.js";
import { jsonKeyOf } from "../codec/json-naming.js";
import { scanArray, type Span } from "../jsonrpc/raw-json.js";

/** How one param is read and written, beyond its field's codec. */
export interface ParamRules {
  /**
   * The native path accepts the param absent: with a whenUnset, nodegate sends
   * that in its place (not every node has the default: Anvil requires the
   * block of eth_getStorageAt); without one, the node applies its default. A
   * typed caller who leaves it unset (or empty, for a list) sends none when no
   * whenUnset is given and no later param is set.
   */
  optional?: boolean;
  /** JSON text sent when a typed caller leaves the field unset (for a block: "latest"). */
  whenUnset?: string;
  /**
   * A native caller who leaves this param off the end, or sends it as null,
   * leaves it to the node's default, also when nodegate re-encodes the params
   * (nodes differ: Anvil estimates gas at "pending", geth at "latest"); a
   * typed caller who leaves it unset still gets whenUnset.
   */
  nodeDefault?: boolean;
  /** JSON text sent for an optional param left unset when a later one is set (state overrides before block overrides: {}). */
  whenSkipped?: string;
  /** Overrides the field's codec (a block param that accepts fewer forms). */
  codec?: ValueCodec;
  /**
   * True when the caller's spelling must be rewritten before it goes upstream
   * (a decimal block number, the seed's "blockhash" key).
   */
  needsRewrite?: (json: unknown) => boolean;
}

/** A param the native path rejects: JSON-RPC -32602 naming the param. */
export class InvalidParamsError extends Error {
  override name = "InvalidParamsError";
  constructor(message: string) {
    super(message);
  }
}

interface ParamPlan {
  index: number;
  /** The name callers see in errors: the field's JSON name (blockHash, fullTransactions). */
  displayName: string;
  /** The key of a named param: the proto field name (block_id, index). */
  namedKey: string;
  localName: string;
  list: boolean;
  message: boolean;
  codec: ValueCodec;
  rules: ParamRules;
}

export interface DecodedParams<M extends Message> {
  request: M;
  /** The params JSON text to forward when the caller's text must not go as sent. */
  rewritten?: string;
  /**
   * Params the caller left off the end that nodegate fills in (a block:
   * "latest"), as JSON texts joined by commas: they go after the caller's
   * own params, which go as sent (eth_getProof echoes each storage key as
   * sent, so re-encoding the others would change the answer).
   */
  appended?: string;
  /**
   * The params the caller left to the node's default (ParamRules.nodeDefault:
   * off the end, or null in place), by index: pass them to encode when the
   * request is encoded again, so they stay as the caller left them.
   */
  leftToNode?: ReadonlySet<number>;
}

/** A positional params array's text with `appended` added at its end ("[]" for a call that sent no array). */
export function withAppended(paramsText: string, isArray: boolean, appended: string): string {
  const close = isArray ? paramsText.lastIndexOf("]") : -1;
  if (close < 0) return `[${appended}]`;
  const head = paramsText.slice(0, close);
  return /^\s*\[\s*$/.test(head) ? `[${appended}]` : `${head},${appended}]`;
}

/**
 * positional: params are a JSON array. named: nodegate sends an object keyed
 * by the fields' proto names (the spec's rollup method "takes named params"),
 * and accepts callers' arrays too, as the Starknet spec allows both.
 */
export type ParamStyle = "positional" | "named";

export class ParamsCodec<M extends Message = Message> {
  readonly #schema: DescMessage;
  readonly #plans: ParamPlan[];
  readonly #style: ParamStyle;

  constructor(
    registry: CodecRegistry,
    schema: DescMessage,
    rules: Readonly<Record<string, ParamRules>>,
    style: ParamStyle,
  ) {
    this.#schema = schema;
    this.#style = style;
    for (const name of Object.keys(rules)) {
      if (!schema.fields.some((f) => f.name === name)) throw new Error(`${schema.typeName} has no field ${name}`);
    }
    // decode marks the params it keeps as sent in a 32-bit mask.
    if (schema.fields.length > 31) throw new Error(`${schema.typeName} has more params than a method may have (31)`);
    this.#plans = schema.fields.map((field: DescField, index) => ({
      index,
      displayName: jsonKeyOf(field),
      namedKey: field.name,
      localName: field.localName,
      list: field.fieldKind === "list",
      message: field.fieldKind === "message",
      codec: rules[field.name]?.codec ?? registry.field(field),
      rules: rules[field.name] ?? {},
    }));
  }

  /** The names of the params in order, for documentation and errors. */
  get names(): string[] {
    return this.#plans.map((p) => p.displayName);
  }

  /**
   * Typed request -> JSON params text. Throws CodecError naming the field.
   * Unset params in `leftToNode` that leave their default to the node are
   * sent as the caller left them: off the end, or null in place (see
   * DecodedParams.leftToNode).
   */
  encode(request: M, leftToNode?: ReadonlySet<number>): string {
    return this.#encode(request, leftToNode, undefined);
  }

  /** encode, with the params `kept` names (by index: the caller's own text of each) written as the caller wrote them. */
  #encode(request: M, leftToNode: ReadonlySet<number> | undefined, kept: readonly (string | undefined)[] | undefined): string {
    const message = request as unknown as Record<string, unknown>;
    const texts: (string | undefined)[] = [];
    for (const plan of this.#plans) {
      const value = message[plan.localName];
      let text: string | undefined;
      const keptText = kept?.[plan.index];
      if (keptText !== undefined) {
        texts.push(keptText);
        continue;
      }
      try {
        if (plan.list && plan.rules.nodeDefault && leftToNode?.has(plan.index)) {
          text = undefined;
        } else if (plan.list) {
          const list = value as unknown[];
          text =
            list.length === 0 && plan.rules.optional && plan.rules.whenUnset === undefined
              ? undefined
              : `[${list.map((v, i) => encodeItem(plan.codec, v, i)).join(",")}]`;
        } else if (value === undefined) {
          if (plan.rules.whenUnset === undefined && !plan.rules.optional) throw new CodecError("", "required, but unset");
          text = plan.rules.nodeDefault && leftToNode?.has(plan.index) ? undefined : plan.rules.whenUnset;
        } else {
          text = plan.codec.encode(value);
        }
      } catch (err) {
        throw locate(err, plan.displayName);
      }
      texts.push(text);
    }
    if (this.#style === "named") return namedParams(this.#plans, texts);
    // An optional param left unset is not sent (nodes that predate it reject it); only trailing ones can be left out.
    while (texts.length > 0 && texts[texts.length - 1] === undefined) texts.pop();
    for (let i = 0; i < texts.length; i++) {
      if (texts[i] !== undefined) continue;
      const plan = this.#plans[i];
      const skipped = plan?.rules.whenSkipped ?? (leftToNode?.has(i) ? "null" : undefined);
      if (skipped === undefined) throw new CodecError(plan?.displayName ?? "", "unset, but a later param is set");
      texts[i] = skipped;
    }
    return `[${texts.join(",")}]`;
  }

  /**
   * JSON params (as parsed from the caller's text, `paramsText`) -> typed request. Throws InvalidParamsError.
   * When one param must be rewritten, the others go in the caller's own text.
   */
  decode(params: unknown, paramsText?: string): DecodedParams<M> {
    let values: unknown[];
    if (params === undefined || params === null) {
      values = [];
    } else if (Array.isArray(params)) {
      values = params;
    } else if (typeof params === "object" && this.#style === "named") {
      const named = params as Record<string, unknown>;
      for (const key of Object.keys(named)) {
        if (!this.#plans.some((p) => p.namedKey === key)) {
          throw new InvalidParamsError(`invalid params: unknown param "${key}", want ${this.#plans.map((p) => p.namedKey).join(", ")}`);
        }
      }
      values = this.#plans.map((p) => named[p.namedKey]);
    } else {
      throw new InvalidParamsError(
        this.#style === "positional" ? "invalid params: want a JSON array of positional params" : "invalid params: want a JSON array or object",
      );
    }
    if (values.length > this.#plans.length) {
      throw new InvalidParamsError(`too many arguments, want at most ${this.#plans.length}`);
    }
    const message = create(this.#schema) as unknown as Record<string, unknown>;
    let rewrite = false;
    // Defaults for params left off the end go after the caller's text, while no param without one comes between.
    let appended: string | undefined;
    let appendable = this.#style === "positional";
    let leftToNode: Set<number> | undefined;
    // Params that need no rewriting, kept as the caller wrote them when another one does (eth_getProof echoes its
    // storage keys as sent; found from outside: a null block re-encoded "0x0" as 32 bytes).
    let asSent = 0;
    for (const plan of this.#plans) {
      const json = values[plan.index];
      if (json === undefined || (json === null && plan.rules.optional)) {
        if (!plan.rules.optional) {
          throw new InvalidParamsError(`missing value for required argument ${plan.index} (${plan.displayName})`);
        }
        const offTheEnd = plan.index >= values.length;
        if (plan.rules.nodeDefault && this.#style === "positional") {
          // Left to the node, off the end or as null in place (found from outside: [call, null] was sent with "latest").
          (leftToNode ??= new Set()).add(plan.index);
          if (offTheEnd) appendable = false;
          // A null stays a null (geth reads eth_feeHistory's null percentiles as none, and refuses them left off).
          else asSent |= 1 << plan.index;
        } else if (plan.rules.whenUnset === undefined) {
          if (offTheEnd) appendable = false;
          // A null in place stays a null when another param is rewritten (a state override's null is not made {}).
          else if (json === null) asSent |= 1 << plan.index;
        } else if (offTheEnd && appendable) {
          appended = appended === undefined ? plan.rules.whenUnset : `${appended},${plan.rules.whenUnset}`;
        } else {
          rewrite = true;
        }
        continue;
      }
      try {
        if (plan.list) {
          // null for a required list is an empty one, as geth decodes it (found from outside: viem's getFeeHistory
          // sends rewardPercentiles null, which geth-based providers answer); it goes to the node as the caller wrote it.
          if (json === null) {
            message[plan.localName] = [];
            asSent |= 1 << plan.index;
            continue;
          }
          if (!Array.isArray(json)) throw new CodecError("", "want an array");
          message[plan.localName] = json.map((v, i) => decodeItem(plan.codec, v, i));
        } else {
          message[plan.localName] = plan.codec.decode(json);
        }
      } catch (err) {
        if (!(err instanceof CodecError)) throw err;
        // Same path spelling as the typed path: "storageKeys[0]", "transaction.to".
        const where = err.within(plan.displayName).path;
        throw new InvalidParamsError(`invalid argument ${plan.index} (${where}): ${err.reason}`);
      }
      if (plan.rules.needsRewrite?.(json)) rewrite = true;
      else asSent |= 1 << plan.index;
    }
    const request = message as unknown as M;
    if (rewrite) return { request, rewritten: this.#encode(request, leftToNode, callerTexts(asSent, values, paramsText)), leftToNode };
    if (leftToNode !== undefined) return appended === undefined ? { request, leftToNode } : { request, appended, leftToNode };
    return appended === undefined ? { request } : { request, appended };
  }
}

/**
 * The caller's own text of each param whose bit is set in `asSent` (1 << index): its slice of the params text when
 * that is the positional array `values` was parsed from, since JSON.stringify of the parsed value would change
 * numbers past 2^53, 1e0 and 1e400, key order and duplicate keys (found from outside); else JSON.stringify.
 */
function callerTexts(asSent: number, values: readonly unknown[], paramsText: string | undefined): (string | undefined)[] {
  const texts: (string | undefined)[] = [];
  let spans: Span[] | undefined;
  let buf: Buffer | undefined;
  if (paramsText !== undefined) {
    buf = Buffer.from(paramsText, "utf8");
    try {
      const scanned = scanArray(buf, 0).elements;
      if (scanned.length === values.length) spans = scanned;
    } catch {
      // Not an array (named params): each value as JSON.stringify writes it.
    }
  }
  for (let i = 0; i < values.length; i++) {
    if ((asSent & (1 << i)) === 0) continue;
    const span = spans?.[i];
    texts[i] = span !== undefined && buf !== undefined ? buf.toString("utf8", span.start, span.end) : JSON.stringify(values[i]);
  }
  return texts;
}

/** {"block_id":...,"index":...}: an optional param left unset is not sent, as nodes that predate it reject it. */
function namedParams(plans: readonly ParamPlan[], texts: readonly (string | undefined)[]): string {
  const members: string[] = [];
  for (let i = 0; i < texts.length; i++) {
    if (texts[i] !== undefined) members.push(`${JSON.stringify(plans[i]?.namedKey)}:${texts[i]}`);
  }
  return `{${members.join(",")}}`;
}

function encodeItem(codec: ValueCodec, value: unknown, i: number): string {
  try {
    return codec.encode(value);
  } catch (err) {
    throw locate(err, `[${i}]`);
  }
}

function decodeItem(codec: ValueCodec, value: unknown, i: number): unknown {
  try {
    return codec.decode(value);
  } catch (err) {
    throw locate(err, `[${i}]`);
  }
}

