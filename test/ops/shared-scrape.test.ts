/**
 * GET /metrics runs one scrape at a time, shared by the requests that wait for it (found from outside, h100: each
 * pipelined request started its own, and a keyless client pipelining thousands on connections it never read grew
 * the process by a gigabyte). No answer holds counters older than its request.
 */
import net from "node:net";
import { expect, it } from "vitest";
import { sharedScrape } from "../../src/observability/shared-scrape.js";
import { startNodegate } from "../support/nodegate.js";
import { startProgrammableUpstream } from "../support/programmable-upstream.js";

/** A scrape the test finishes by hand; each run answers with its own number. */
function manualScrapes() {
  const finishers: Array<(fail?: boolean) => void> = [];
  const scrape = () =>
    new Promise<string>((resolve, reject) => {
      const n = finishers.length + 1;
      finishers.push((fail) => (fail ? reject(new Error(`scrape ${n} failed`)) : resolve(`scrape ${n}`)));
    });
  return { scrape, finishers };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

it("requests that come while a scrape runs share the next one, which starts once that one ends", async () => {
  const { scrape, finishers } = manualScrapes();
  const ask = sharedScrape(scrape);
  const first = ask();
  const waiting = Array.from({ length: 50 }, () => ask());
  await settle();
  expect(finishers).toHaveLength(1); // one runs; the fifty wait, none started their own
  finishers[0]?.();
  expect(await first).toBe("scrape 1");
  await settle();
  expect(finishers).toHaveLength(2);
  const late = ask(); // came while the second runs: waits for a third
  finishers[1]?.();
  expect(new Set(await Promise.all(waiting))).toEqual(new Set(["scrape 2"]));
  await settle();
  finishers[2]?.();
  expect(await late).toBe("scrape 3");
  expect(finishers).toHaveLength(3);
  // Idle again: the next request starts its own at once.
  const alone = ask();
  expect(finishers).toHaveLength(4);
  finishers[3]?.();
  expect(await alone).toBe("scrape 4");
});

it("a failed scrape fails the requests that shared it, and those waiting get the next", async () => {
  const { scrape, finishers } = manualScrapes();
  const ask = sharedScrape(scrape);
  const first = ask();
  const second = ask();
  finishers[0]?.(true);
  await expect(first).rejects.toThrow("scrape 1 failed");
  await settle();
  finishers[1]?.();
  expect(await second).toBe("scrape 2");
});

it("pipelined GET /metrics on one connection are each answered with the metrics", async () => {
  const upstream = await startProgrammableUpstream(() => ({ result: "0x1" }));
  const ng = await startNodegate({ upstreamUrl: upstream.url });
  try {
    const socket = net.connect(ng.port, "127.0.0.1");
    let text = "";
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    const count = 50;
    socket.write("GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n".repeat(count - 1) + "GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    await new Promise((resolve) => socket.on("close", resolve));
    expect(text.match(/^HTTP\/1\.1 200 /gm)).toHaveLength(count);
    expect(text.match(/^# TYPE nodegate_requests_total counter$/gm)).toHaveLength(count);
  } finally {
    await ng.close();
    await upstream.close();
  }
});
