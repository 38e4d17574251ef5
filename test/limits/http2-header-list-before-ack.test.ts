/**
 * The 64 KiB bound on an HTTP/2 request's decoded header list holds for a
 * client that has not acknowledged nodegate's SETTINGS (Node applies the
 * announced bound only after the acknowledgement). Found from outside: a
 * client that never acknowledged had each 6 KB stream (one 4,000-byte
 * header indexed, then named 1,900 times by 1-byte HPACK references)
 * decoded to 7.6 MB and served, 20 of them costing 310 ms of CPU. Such a
 * stream is now reset (ENHANCE_YOUR_CALM), as after the acknowledgement,
 * and a second one makes the connection take no new streams (GOAWAY) and
 * close once its streams are done: nothing is served.
 */
import net from "node:net";
import { expect, it } from "vitest";
import { h2Frame as frame, hpackInteger, hpackLiteral as literal, hpackText } from "../support/h2-frames.js";
import { startNodegate } from "../support/nodegate.js";
import { type ProgrammableUpstream, startProgrammableUpstream } from "../support/programmable-upstream.js";

/** A field whose name is the static table's entry `index`, its value a literal (not added to the dynamic table). */
const literalIndexedName = (index: number, value: string) => Buffer.concat([hpackInteger(index, 4, 0x00), hpackText(value)]);

it("a client that never acknowledges SETTINGS cannot have a huge header list decoded and served", async () => {
  const upstream: ProgrammableUpstream = await startProgrammableUpstream(() => ({ result: "0x2a" }));
  const ng = await startNodegate({ upstreamUrl: upstream.url });
  try {
    const frames = [Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(4, 0, 0, Buffer.alloc(0))];
    for (let k = 0; k < 20; k++) {
      const parts = [
        Buffer.from([0x83, 0x86]), // :method POST, :scheme http
        literalIndexedName(4, "/grpc.health.v1.Health/Check"),
        literalIndexedName(1, "127.0.0.1"),
        literalIndexedName(31, "application/grpc"),
        literal("te", "trailers", false),
      ];
      if (k === 0) parts.push(literal("x-amp", "a".repeat(4000), true));
      for (let i = 0; i < 1900; i++) parts.push(hpackInteger(62, 7, 0x80)); // the dynamic table's newest entry
      const block = Buffer.concat(parts);
      const stream = 1 + 2 * k;
      for (let at = 0; at < block.length; at += 16384) {
        const last = at + 16384 >= block.length;
        frames.push(frame(at === 0 ? 1 : 9, last ? 0x4 : 0, stream, block.subarray(at, at + 16384)));
      }
      frames.push(frame(0, 1, stream, Buffer.alloc(5)));
    }
    const socket = net.connect(ng.port, "127.0.0.1");
    socket.on("error", () => {});
    let received = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => (received = Buffer.concat([received, d])));
    socket.write(Buffer.concat(frames));
    // What the server sent: frame types, with the codes of resets and GOAWAYs.
    const sent = (): string[] => {
      const types: string[] = [];
      for (let at = 0; at + 9 <= received.length; ) {
        const length = received.readUIntBE(at, 3);
        const type = received[at + 3];
        const stream = received.readUInt32BE(at + 5) & 0x7fffffff;
        if (at + 9 + length > received.length) break;
        types.push(type === 7 ? `GOAWAY ${received.readUInt32BE(at + 9 + 4)}` : type === 3 ? `RST ${stream} ${received.readUInt32BE(at + 9)}` : String(type));
        at += 9 + length;
      }
      return types;
    };
    const closedByServer = new Promise<boolean>((resolve) => {
      socket.once("end", () => resolve(true));
      setTimeout(() => resolve(false), 5000);
    });
    for (let i = 0; i < 100 && !sent().includes("GOAWAY 11"); i++) await new Promise((r) => setTimeout(r, 50));
    // With none of its streams left, the connection is closed (found from outside: it waited in CLOSE-WAIT for the
    // idle timeout once the client had gone).
    expect(await closedByServer).toBe(true);
    socket.destroy();
    // The first stream reset with ENHANCE_YOUR_CALM, the second ended the connection's new streams, and no stream
    // was answered (HEADERS).
    expect(sent()).toContain("RST 1 11");
    expect(sent()).toContain("GOAWAY 11");
    expect(sent()).not.toContain("1");
    // And the process serves others.
    const answer = await fetch(`http://${ng.address}/healthz`);
    expect(answer.status).toBe(200);
  } finally {
    await ng.close();
    await upstream.close();
  }
});
