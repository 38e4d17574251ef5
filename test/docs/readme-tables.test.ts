/** The README's generated tables match the code they describe (npm run docs:tables rewrites them). */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { renderTables, sections } from "../../scripts/readme-tables.js";

it("README method and error tables are generated from the method table and the code map", () => {
  const readme = sections(readFileSync(join(import.meta.dirname, "../../README.md"), "utf8"));
  const expected = renderTables();
  expect(Object.keys(readme).sort()).toEqual(Object.keys(expected).sort());
  for (const [name, table] of Object.entries(expected)) expect(readme[name], `README table ${name} (run npm run docs:tables)`).toBe(table);
});
