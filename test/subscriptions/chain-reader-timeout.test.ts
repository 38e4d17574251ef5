/**
 * A feed's eth_getLogs read that nodegate's own deadline ended, while the node
 * answered other calls: a query timeout, said as nodegate's limit rather than
 * in the node's words (a subscriber ended for it quotes the text); one that a
 * silent node let run out stays the outage it is.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../src/config/config.js";
import { upstreamTimeout } from "../../src/errors/catalogue.js";
import { ChainReader } from "../../src/subscriptions/chain-reader.js";
import type { Network } from "../../src/upstream/network.js";

/** The network's part a reader uses: every eth_getLogs runs out nodegate's own deadline. */
function networkRunningOut(heard: boolean): Network {
  return {
    call: async () => {
      throw upstreamTimeout(DEFAULT_LIMITS.getLogsTimeoutMs);
    },
    heardFromSince: () => heard,
    lastOutageAt: Number.NEGATIVE_INFINITY,
  } as unknown as Network;
}

describe("ChainReader.logs under nodegate's own query deadline", () => {
  it("the node answering meanwhile: -32005, naming nodegate's limit", async () => {
    const reader = new ChainReader(networkRunningOut(true), DEFAULT_LIMITS);
    await expect(reader.logs({ addresses: [], topics: [] }, 5, 5)).rejects.toMatchObject({
      code: -32005,
      message: `query timeout exceeded (nodegate's getLogsTimeoutMs, ${DEFAULT_LIMITS.getLogsTimeoutMs} ms)`,
    });
  });

  it("the node silent meanwhile: the outage, not a query timeout", async () => {
    const reader = new ChainReader(networkRunningOut(false), DEFAULT_LIMITS);
    await expect(reader.logs({ addresses: [], topics: [] }, 5, 5)).rejects.toMatchObject({ message: expect.stringMatching(/^upstream timeout: no answer within/) });
  });
});
