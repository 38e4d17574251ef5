/**
 * The setup the typed lanes' tests share: Anvil with a block of 40 logs, a
 * programmable upstream in front of it whose answers a test can override
 * (reset before each test), and nodegate on that upstream.
 */
import { afterAll, beforeAll, beforeEach } from "vitest";
import { type AnvilNode, startAnvil } from "../../src/embedded/anvil.js";
import { startNodegate, type TestNodegate } from "./nodegate.js";
import { deployProbe } from "./probe.js";
import { type Answer, type ProgrammableUpstream, startProgrammableUpstream, type UpstreamRequest } from "./programmable-upstream.js";

export interface LaneFixture {
  anvil: AnvilNode;
  upstream: ProgrammableUpstream;
  ng: TestNodegate;
  /** A block whose one transaction emitted 40 logs. */
  logsBlock: bigint;
  /** This test's answer for a request, or undefined to forward it to Anvil. */
  override: ((request: UpstreamRequest) => Answer | undefined) | undefined;
}

/** Registers the hooks that start and stop the fixture; its fields are set once beforeAll has run. */
export function useLaneFixture(): LaneFixture {
  const f = { override: undefined } as LaneFixture;
  beforeAll(async () => {
    f.anvil = await startAnvil();
    const probe = await deployProbe(f.anvil.url);
    const hash = await probe.wallet.writeContract({ address: probe.address, abi: probe.abi, functionName: "storeMany", args: [40n] });
    f.logsBlock = (await probe.client.waitForTransactionReceipt({ hash })).blockNumber;
    f.upstream = await startProgrammableUpstream((r) => f.override?.(r) ?? { forward: f.anvil.url });
    f.ng = await startNodegate({ upstreamUrl: f.upstream.url });
  }, 60_000);
  afterAll(async () => {
    await f.ng?.close();
    await f.upstream?.close();
    await f.anvil?.stop();
  });
  beforeEach(() => {
    f.override = undefined;
  });
  return f;
}
