/**
 * An upstream's answer pace, as its silence is judged by: answers a hang held
 * are learnt as a held pace, which the next answer sent after the hang
 * confirms or sets aside, and which is forgotten unconfirmed after twice its
 * own length.
 */
import { describe, expect, it } from "vitest";
import { AnswerPace } from "../../src/upstream/answer-pace.js";

describe("AnswerPace", () => {
  it("learns a moving average by method: fastest and slowest are by method, not over every answer", () => {
    const pace = new AnswerPace();
    expect(pace.fastestMs(0)).toBe(0);
    expect(pace.slowestMs(0)).toBe(0);
    pace.learn("eth_blockNumber", 10, false, 0);
    pace.learn("eth_getLogs", 8000, false, 0);
    expect(pace.fastestMs(0)).toBe(10);
    expect(pace.slowestMs(0)).toBe(8000);
    pace.learn("eth_blockNumber", 110, false, 0);
    expect(pace.fastestMs(0)).toBeCloseTo(20); // 10 + (110 - 10) * 0.1
  });

  it("a hang's held answers of a method asked rarely are set aside by its next answer after the hang, when much faster", () => {
    // Found from outside: a 13 s hang's held answers of a write were learnt as its pace, and the next hang's verdict
    // waited 19.5 s, the one after longer still.
    const pace = new AnswerPace();
    pace.learn("eth_blockNumber", 5, false, 0);
    pace.learn("eth_sendRawTransaction", 13_000, true, 1000);
    expect(pace.slowestMs(1000)).toBe(13_000); // until told otherwise, it may be the node's pace
    pace.learn("eth_sendRawTransaction", 40, false, 2000);
    expect(pace.slowestMs(2000)).toBe(40);
    // A held answer of a method with a pace of its own: the pace comes back as it was.
    pace.learn("eth_blockNumber", 13_000, true, 3000);
    expect(pace.slowestMs(3000)).toBe(13_000);
    pace.learn("eth_blockNumber", 5, false, 4000);
    expect(pace.fastestMs(4000)).toBe(5);
    expect(pace.slowestMs(4000)).toBe(40);
  });

  it("a busy node's held answers are confirmed by answers as slow after the circuit closed, and kept", () => {
    // Found from outside: left out, a busy node behind a capping front, judged down before its pace was known, was
    // judged down again at every round.
    const pace = new AnswerPace();
    pace.learn("eth_getBlockByHash", 10_000, true, 10_000);
    pace.learn("eth_getBlockByHash", 12_000, true, 12_000);
    expect(pace.slowestMs(12_000)).toBe(12_000); // the slowest held answer
    pace.learn("eth_getBlockByHash", 8000, false, 22_000); // as slow, near enough: the node's pace
    expect(pace.slowestMs(22_000)).toBeCloseTo(11_600);
    expect(pace.slowestMs(10_000_000)).toBeCloseTo(11_600); // confirmed: it does not expire
  });

  it("a held pace no later answer confirms counts for twice its length, then the method's pace is as before", () => {
    const pace = new AnswerPace();
    pace.learn("eth_blockNumber", 5, false, 0);
    pace.learn("eth_getBalance", 20, false, 0);
    pace.learn("eth_sendRawTransaction", 6000, true, 1000);
    pace.learn("eth_getBalance", 6000, true, 1000);
    expect(pace.slowestMs(12_999)).toBe(6000);
    expect(pace.slowestMs(13_000)).toBe(20);
    expect(pace.fastestMs(13_000)).toBe(5);
  });

  it("an answer neither 10 times faster than a held pace nor half as slow says nothing: the held pace still expires", () => {
    // Found from outside: a shorter hang that no verdict caught answered a write in 8 s, which "confirmed" the last
    // hang's 20 s held pace for good, and later hangs were judged after 18 s, or never.
    const pace = new AnswerPace();
    pace.learn("eth_blockNumber", 5, false, 0);
    pace.learn("eth_sendRawTransaction", 20_000, true, 0);
    pace.learn("eth_sendRawTransaction", 8000, false, 30_000);
    expect(pace.slowestMs(30_000)).toBeCloseTo(18_800); // folded in meanwhile
    expect(pace.slowestMs(40_000)).toBe(5); // expired at twice the held pace's length
  });
});
