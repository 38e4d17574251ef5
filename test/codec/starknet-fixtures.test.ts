/**
 * The Starknet fixtures match the spec. test/support/starknet-fixtures.ts
 * assigns each JSON file to its @starknet-io/types-js type, so a drifted
 * fixture fails `tsc --noEmit` (part of npm test); the probes below show that
 * check rejects each kind of drift. What a JSON import cannot type (the
 * "type" and "version" literals) is checked here at run time.
 */
import type { INVOKE_TXN_V3, L1_HANDLER_TXN } from "@starknet-io/types-js";
import { describe, expect, it } from "vitest";
import { TransactionWithHashSchema } from "../../gen/nodegate/starknet/v1/transaction_pb.js";
import invokeV3Json from "../fixtures/starknet/invoke-v3.json" with { type: "json" };
import l1HandlerJson from "../fixtures/starknet/l1-handler.json" with { type: "json" };
import { STARKNET_FIXTURES, type SpecExact, type WithHash } from "../support/starknet-fixtures.js";

// Compile-time probes: each line must fail to type-check (tsc reports an unused @ts-expect-error otherwise).
const { proof_facts: _proofFacts, ...withoutOptionalField } = invokeV3Json;
// @ts-expect-error a spec field left out, even an optional one
const missingOptional: SpecExact<WithHash<INVOKE_TXN_V3>, typeof withoutOptionalField> = withoutOptionalField;
const { entry_point_selector: _selector, ...withoutRequiredField } = l1HandlerJson;
// @ts-expect-error a required spec field left out
const missingRequired: SpecExact<WithHash<L1_HANDLER_TXN>, typeof withoutRequiredField> = withoutRequiredField;
const withExtraKey = { ...invokeV3Json, max_fee: "0x1" };
// @ts-expect-error a key the variant does not define
const extraKey: SpecExact<WithHash<INVOKE_TXN_V3>, typeof withExtraKey> = withExtraKey;
const withNestedExtra = { ...invokeV3Json, resource_bounds: { ...invokeV3Json.resource_bounds, l3_gas: invokeV3Json.resource_bounds.l2_gas } };
// @ts-expect-error an unknown key deeper down
const nestedExtraKey: SpecExact<WithHash<INVOKE_TXN_V3>, typeof withNestedExtra> = withNestedExtra;
const withWrongShape = { ...invokeV3Json, tip: 100 };
// @ts-expect-error a u64 written as a JSON number
const wrongShape: SpecExact<WithHash<INVOKE_TXN_V3>, typeof withWrongShape> = withWrongShape;

const extrasField = "json_extras";

/** Keys a variant models that the current spec's fixtures lack: nodes of spec 0.2-0.4 wrote a nonce on version 0 INVOKEs. */
const OLDER_SPEC_KEYS: Record<string, string[]> = { invokeV0: ["nonce"] };

describe("Starknet fixtures", () => {
  it("cover every variant of TransactionWithHash once", () => {
    const cases = TransactionWithHashSchema.oneofs[0]?.fields.map((f) => f.localName).sort();
    expect(cases).toHaveLength(11);
    expect(STARKNET_FIXTURES.map((f) => f.variant).sort()).toEqual(cases);
  });

  for (const f of STARKNET_FIXTURES) {
    it(`${f.name} carries the spec's type and version literals`, () => {
      expect(f.json.type).toBe(f.type);
      expect(f.json.version).toBe(f.version);
    });

    it(`${f.name} has exactly the keys the proto models for its variant (beside those only older nodes write)`, () => {
      const variant = TransactionWithHashSchema.fields.find((field) => field.localName === f.variant);
      const older = OLDER_SPEC_KEYS[f.variant] ?? [];
      const modeled = variant?.message?.fields.map((field) => field.name).filter((name) => name !== extrasField && !older.includes(name)) ?? [];
      expect(Object.keys(f.json).sort()).toEqual(["transaction_hash", "type", ...modeled].sort());
    });
  }
});
