/**
 * specRule: a vitest test named after a rule of the spec, which fails unless
 * it went through exactly the front doors the rule lists, so the conformance
 * table's "Doors" column is what the tests really did.
 */
import { expect, it } from "vitest";
import { type Door, ruleById, testNameOf } from "../rules.js";

let exercised: Set<Door> | undefined;

/** Records that the running rule's test used a door; the door clients call it on every request. */
export function noteDoor(door: Door): void {
  exercised?.add(door);
}

/** Declares the test of one registered rule. */
export function specRule(id: string, test: () => Promise<void>, timeoutMs?: number): void {
  const rule = ruleById(id);
  if (rule.deliveredBy !== undefined) throw new Error(`${id} is delivered by ${rule.deliveredBy}; remove deliveredBy before testing it`);
  it(
    testNameOf(rule),
    async () => {
      const used = new Set<Door>();
      exercised = used;
      try {
        await test();
      } finally {
        exercised = undefined;
      }
      expect([...used].sort(), `the doors [${id}] went through`).toEqual([...rule.doors].sort());
    },
    timeoutMs,
  );
}
