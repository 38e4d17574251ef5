import { describe, expect, it } from "vitest";
import { holdsMoreJsonContainers } from "../../src/codec/json-weight.js";

const text = (s: string) => Buffer.from(s);

describe("holdsMoreJsonContainers", () => {
  it("counts arrays and objects, nested or side by side, and stops at the limit", () => {
    const nested = (n: number) => text(`${"[".repeat(n)}${"]".repeat(n)}`);
    const sideBySide = (n: number) => text(`[${Array(n).fill("{}").join(",")}]`);
    expect(holdsMoreJsonContainers(nested(10), 10)).toBe(false);
    expect(holdsMoreJsonContainers(nested(11), 10)).toBe(true);
    expect(holdsMoreJsonContainers(sideBySide(9), 10)).toBe(false); // 9 objects and the array around them
    expect(holdsMoreJsonContainers(sideBySide(10), 10)).toBe(true);
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    expect(holdsMoreJsonContainers(text(`["${"[{".repeat(50)}"]`), 10)).toBe(false);
    expect(holdsMoreJsonContainers(text(`["a\\"${"[".repeat(50)}"]`), 10)).toBe(false);
    // An escaped backslash ends before the quote, which closes the string: what follows counts.
    expect(holdsMoreJsonContainers(text(`["a\\\\",${"[".repeat(20)}${"]".repeat(20)}]`), 10)).toBe(true);
  });

  it("does not weigh a text too short to hold more than the limit", () => {
    expect(holdsMoreJsonContainers(text("[[[[]]]]"), 4)).toBe(false);
    expect(holdsMoreJsonContainers(text("[[[[[]]]]]"), 4)).toBe(true);
  });

  it("an unterminated string ends the count", () => {
    expect(holdsMoreJsonContainers(text(`[[[[[[["${"[".repeat(30)}`), 10)).toBe(false);
  });
});
