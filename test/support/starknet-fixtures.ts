/**
 * The Starknet transaction fixtures (test/fixtures/starknet/*.json), one per
 * TXN variant of spec 0.10 with every field filled, checked against the
 * @starknet-io/types-js types at compile time: `tsc --noEmit` fails when a
 * fixture lacks a spec field, has a key the spec does not define, or gives a
 * field the wrong shape.
 */
import type {
  DECLARE_TXN_V0,
  DECLARE_TXN_V1,
  DECLARE_TXN_V2,
  DECLARE_TXN_V3,
  DEPLOY_ACCOUNT_TXN_V1,
  DEPLOY_ACCOUNT_TXN_V3,
  DEPLOY_TXN,
  INVOKE_TXN_V0,
  INVOKE_TXN_V1,
  INVOKE_TXN_V3,
  L1_HANDLER_TXN,
  TXN_HASH,
} from "@starknet-io/types-js";
import type { TransactionWithHash } from "../../gen/nodegate/starknet/v1/transaction_pb.js";
import declareV0Json from "../fixtures/starknet/declare-v0.json" with { type: "json" };
import declareV1Json from "../fixtures/starknet/declare-v1.json" with { type: "json" };
import declareV2Json from "../fixtures/starknet/declare-v2.json" with { type: "json" };
import declareV3Json from "../fixtures/starknet/declare-v3.json" with { type: "json" };
import deployAccountV1Json from "../fixtures/starknet/deploy-account-v1.json" with { type: "json" };
import deployAccountV3Json from "../fixtures/starknet/deploy-account-v3.json" with { type: "json" };
import deployJson from "../fixtures/starknet/deploy.json" with { type: "json" };
import invokeV0Json from "../fixtures/starknet/invoke-v0.json" with { type: "json" };
import invokeV1Json from "../fixtures/starknet/invoke-v1.json" with { type: "json" };
import invokeV3Json from "../fixtures/starknet/invoke-v3.json" with { type: "json" };
import l1HandlerJson from "../fixtures/starknet/l1-handler.json" with { type: "json" };

/** The spec's TXN_WITH_HASH for one variant. */
export type WithHash<T> = T & { transaction_hash: TXN_HASH };

/**
 * A JSON import types every string as `string`, so the spec's string literal
 * types ("INVOKE", "0x3") are widened here; the literals are checked against
 * the spec types through StarknetFixture.type/version and at run time.
 */
export type Widen<T> = T extends string
  ? string
  : T extends readonly (infer U)[]
    ? Widen<U>[]
    : T extends object
      ? { [K in keyof T]: Widen<T[K]> }
      : T;

/** Actual with every key the spec does not define (at any depth) turned into `never`. */
export type NoExtraKeys<Spec, Actual> = Actual extends readonly (infer A)[]
  ? NoExtraKeys<Spec extends readonly (infer S)[] ? S : never, A>[]
  : Actual extends object
    ? { [K in keyof Actual]: K extends keyof Spec ? NoExtraKeys<Spec[K], Actual[K]> : never }
    : Actual;

/**
 * Resolves to Actual when it has every spec field (optional ones too) and no
 * other key, so `const x: SpecExact<Spec, typeof json> = json` compiles only
 * for an exact fixture; otherwise to a type the JSON cannot be assigned to.
 */
export type SpecExact<Spec, Actual> =
  Actual extends Required<Widen<Spec>> ? (Actual extends NoExtraKeys<Spec, Actual> ? Actual : NoExtraKeys<Spec, Actual>) : Required<Widen<Spec>>;

const invokeV0: SpecExact<WithHash<INVOKE_TXN_V0>, typeof invokeV0Json> = invokeV0Json;
const invokeV1: SpecExact<WithHash<INVOKE_TXN_V1>, typeof invokeV1Json> = invokeV1Json;
const invokeV3: SpecExact<WithHash<INVOKE_TXN_V3>, typeof invokeV3Json> = invokeV3Json;
const declareV0: SpecExact<WithHash<DECLARE_TXN_V0>, typeof declareV0Json> = declareV0Json;
const declareV1: SpecExact<WithHash<DECLARE_TXN_V1>, typeof declareV1Json> = declareV1Json;
const declareV2: SpecExact<WithHash<DECLARE_TXN_V2>, typeof declareV2Json> = declareV2Json;
const declareV3: SpecExact<WithHash<DECLARE_TXN_V3>, typeof declareV3Json> = declareV3Json;
const deploy: SpecExact<WithHash<DEPLOY_TXN>, typeof deployJson> = deployJson;
const deployAccountV1: SpecExact<WithHash<DEPLOY_ACCOUNT_TXN_V1>, typeof deployAccountV1Json> = deployAccountV1Json;
const deployAccountV3: SpecExact<WithHash<DEPLOY_ACCOUNT_TXN_V3>, typeof deployAccountV3Json> = deployAccountV3Json;
const l1Handler: SpecExact<WithHash<L1_HANDLER_TXN>, typeof l1HandlerJson> = l1HandlerJson;

export type VariantCase = NonNullable<TransactionWithHash["variant"]["case"]>;

export interface StarknetFixture {
  /** The file name without .json. */
  name: string;
  /** The TransactionWithHash variant the fixture decodes to. */
  variant: VariantCase;
  /** The spec's "type" literal of the variant. */
  type: string;
  /** The spec's "version" literal the fixture carries. */
  version: string;
  json: Readonly<Record<string, unknown>>;
}

/** Ties a fixture's expected type and version to the literals of its spec type. */
function fixture<Spec extends { type: string; version: string }>(
  name: string,
  variant: VariantCase,
  type: Spec["type"],
  version: Spec["version"],
  json: object,
): StarknetFixture {
  return { name, variant, type, version, json: json as Readonly<Record<string, unknown>> };
}

/** Every variant, in the order the fixture upstream puts them in its block. */
export const STARKNET_FIXTURES: readonly StarknetFixture[] = [
  fixture<INVOKE_TXN_V0>("invoke-v0", "invokeV0", "INVOKE", "0x0", invokeV0),
  fixture<INVOKE_TXN_V1>("invoke-v1", "invokeV1", "INVOKE", "0x1", invokeV1),
  fixture<INVOKE_TXN_V3>("invoke-v3", "invokeV3", "INVOKE", "0x3", invokeV3),
  fixture<DECLARE_TXN_V0>("declare-v0", "declareV0", "DECLARE", "0x0", declareV0),
  fixture<DECLARE_TXN_V1>("declare-v1", "declareV1", "DECLARE", "0x1", declareV1),
  fixture<DECLARE_TXN_V2>("declare-v2", "declareV2", "DECLARE", "0x2", declareV2),
  fixture<DECLARE_TXN_V3>("declare-v3", "declareV3", "DECLARE", "0x3", declareV3),
  fixture<DEPLOY_TXN>("deploy", "deploy", "DEPLOY", "0x0", deploy),
  fixture<DEPLOY_ACCOUNT_TXN_V1>("deploy-account-v1", "deployAccountV1", "DEPLOY_ACCOUNT", "0x1", deployAccountV1),
  fixture<DEPLOY_ACCOUNT_TXN_V3>("deploy-account-v3", "deployAccountV3", "DEPLOY_ACCOUNT", "0x3", deployAccountV3),
  fixture<L1_HANDLER_TXN>("l1-handler", "l1Handler", "L1_HANDLER", "0x0", l1Handler),
];

export function starknetFixture(name: string): StarknetFixture {
  const found = STARKNET_FIXTURES.find((f) => f.name === name);
  if (found === undefined) throw new Error(`no Starknet fixture ${name}`);
  return found;
}
