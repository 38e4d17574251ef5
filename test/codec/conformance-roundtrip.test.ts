import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { equals } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { createMethodTable } from "../../src/methods/default-table.js";
import type { MethodSpec } from "../../src/methods/method-table.js";
import { CONFORMANCE_DIR, conformanceCases, SHARED_CONFORMANCE_DIR } from "../support/conformance.js";

const table = createMethodTable();
const cases = conformanceCases();

describe("the vendored conformance fixtures", () => {
  // The copy must be the shared original, byte for byte, wherever the original is present.
  it.runIf(existsSync(SHARED_CONFORMANCE_DIR))("equal ../shared/conformance/execution-apis (skipped where the workspace has no shared folder)", () => {
    const names = readdirSync(SHARED_CONFORMANCE_DIR).sort();
    expect(readdirSync(CONFORMANCE_DIR).filter((f) => f !== "SOURCE.md").sort()).toEqual(names);
    for (const name of names) {
      expect(readFileSync(join(CONFORMANCE_DIR, name), "utf8"), name).toBe(readFileSync(join(SHARED_CONFORMANCE_DIR, name), "utf8"));
    }
  });
});

/** Hex case aside: addresses may come checksummed; nodegate writes lowercase. */
function lowerHex(value: unknown): unknown {
  if (typeof value === "string") return /^0x[0-9a-fA-F]*$/.test(value) ? value.toLowerCase() : value;
  if (Array.isArray(value)) return value.map(lowerHex);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, lowerHex(v)]));
  }
  return value;
}

describe("execution-apis conformance fixtures round-trip JSON -> proto -> JSON", () => {
  it("has the 90 recorded cases", () => {
    expect(cases.length).toBe(90);
  });

  it("only net_version is outside the method table (it has no typed RPC)", () => {
    expect([...new Set(cases.filter((c) => table.byJsonRpc(c.method) === undefined).map((c) => c.method))]).toEqual(["net_version"]);
  });

  for (const c of cases.filter((c) => "result" in c.response && table.byJsonRpc(c.method) !== undefined)) {
    const spec = table.byJsonRpc(c.method) as MethodSpec;
    it(`${c.method} ${c.file}`, () => {
      const result = c.response.result;
      const message = spec.result.decode(result);
      const text = spec.result.encode(message);
      expect(JSON.parse(text)).toEqual(lowerHex(result));
      // and back: proto -> JSON -> proto gives an equal message
      expect(equals(spec.rpc.output, spec.result.decode(JSON.parse(text)), message)).toBe(true);
    });
  }
});

describe("a list field a node sends as null", () => {
  it("round-trips as null, written once (not [] and then null)", () => {
    // Found from outside: the block's uncles and a receipt's logs came back as `"uncles":[],…,"uncles":null`.
    const spec = table.byJsonRpc("eth_getBlockByNumber") as MethodSpec;
    const block = { number: "0x10", hash: `0x${"aa".repeat(32)}`, uncles: null, transactions: [] };
    const text = spec.result.encode(spec.result.decode(block));
    expect(text.match(/"uncles"/g)).toHaveLength(1);
    expect(JSON.parse(text)).toEqual(block);
  });
});

describe("a field without presence (no `optional`) a node sends as null", () => {
  it("round-trips as null, not its zero value, once", () => {
    // Found from outside (h101): an access list entry's "address": null was kept (jsonExtras.nullKeys) but written back as
    // the field's zero value, refused as "want 20 bytes, got 0", so the typed answer could not be turned back into JSON.
    const spec = table.byJsonRpc("eth_getTransactionByHash") as MethodSpec;
    const tx = {
      hash: `0x${"11".repeat(32)}`,
      type: "0x1",
      accessList: [
        { address: null, storageKeys: null },
        { address: `0x${"22".repeat(20)}`, storageKeys: [] },
      ],
    };
    const text = spec.result.encode(spec.result.decode(tx));
    expect(text.match(/"address"/g)).toHaveLength(2);
    expect(JSON.parse(text)).toEqual(tx);
  });
});
