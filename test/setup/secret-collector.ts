/**
 * Runs before every test file: every fetch a test (or viem) makes has its
 * response status, headers and body recorded for the secret scan, and the
 * file's record is written when it ends.
 */
import { afterAll, beforeAll } from "vitest";
import { recordSeen, recordSeenLater, writeScanRecord } from "../support/secret-scan.js";

const realFetch = globalThis.fetch;
globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const res = await realFetch(input, init);
  recordSeen(`HTTP ${res.status} headers`, JSON.stringify([...res.headers]));
  recordSeenLater(`HTTP ${res.status} body`, res.clone().text());
  return res;
};

let file = "?";
beforeAll((suite) => {
  file = (suite as { filepath?: string }).filepath?.replace(`${process.cwd()}/`, "") ?? suite.name;
});
afterAll(async () => {
  await writeScanRecord(file);
});
