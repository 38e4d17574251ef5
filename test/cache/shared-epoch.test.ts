/**
 * SharedEpoch's reading and replacing of a shared store's rewind token, over
 * an in-memory EpochStore that keeps the Redis scripts' rules (see
 * redis-cache-store.ts; test/cache/shared-store-rewinds.test.ts runs the
 * scripts themselves): how often it asks the store, and what it does while
 * the store or the node cannot answer.
 */
import { expect, it } from "vitest";
import { SharedEpoch } from "../../src/cache/shared-epoch.js";
import type { EpochStore } from "../../src/cache/store.js";
import type { ChainHead } from "../../src/upstream/chain-head.js";

function memoryEpochs() {
  const values = new Map<string, string>();
  let reachable = true;
  const calls: string[] = [];
  const store: EpochStore = {
    async readEpoch(scope, fresh, mine = "", anchor = "", seen = "") {
      calls.push(`read ${anchor}`);
      if (!reachable) return undefined;
      let v = values.get(scope);
      if (v === undefined) v = anchor === "" ? fresh : `${fresh} ${anchor}`;
      const [token = ""] = v.split(" ");
      const was = v.slice(token.length + 1);
      if (anchor !== "" && token === mine && was === seen && (was === "" || BigInt(anchor.split(" ")[0] as string) > BigInt(was.split(" ")[0] as string))) v = `${token} ${anchor}`;
      values.set(scope, v);
      return v;
    },
    async bumpEpoch(scope, mine, fresh, anchor = "") {
      calls.push("bump");
      if (!reachable) return undefined;
      const v = values.get(scope);
      if (v === undefined || mine === undefined || v.split(" ")[0] === mine) values.set(scope, anchor === "" ? fresh : `${fresh} ${anchor}`);
      return values.get(scope);
    },
  };
  return { store, values, calls, setReachable: (r: boolean) => (reachable = r) };
}

function fakeHead(final: { number: bigint; hash: string }, chain: Map<bigint, string>) {
  const moved: (() => void)[] = [];
  let failing = false;
  const head = {
    get finalizedBlock() {
      return final;
    },
    get lastFinalized() {
      return final.number;
    },
    hashAt: async (n: bigint) => {
      if (failing) throw new Error("node down");
      return chain.get(n) ?? null;
    },
    onFinalizedMoved: (l: () => void) => moved.push(l),
  } as unknown as ChainHead;
  return {
    head,
    move(to: { number: bigint; hash: string }) {
      final = to;
      for (const l of moved) l();
    },
    setFailing: (f: boolean) => (failing = f),
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

it("a token is read once, this process's finalized block recorded beside it once, then nothing until maxAgeMs", async () => {
  const { store, values, calls } = memoryEpochs();
  const { head, move } = fakeHead({ number: 16n, hash: "0xa" }, new Map([[16n, "0xa"]]));
  const epoch = new SharedEpoch(store, head, 60_000);
  expect(epoch.token("eth:1")).toBeUndefined();
  await epoch.firstReading;
  await settle();
  const token = epoch.token("eth:1");
  expect(token).toMatch(/^[\w-]{12}$/);
  expect(values.get("eth:1")).toBe(`${token} 16 0xa`);
  expect(calls).toEqual(["read 16 0xa"]);
  expect(epoch.vouchedUpTo).toBe(16n);
  for (let i = 0; i < 100; i++) epoch.token("eth:1");
  await settle();
  expect(calls).toHaveLength(1);
  // A new finalized block is recorded at once, once.
  move({ number: 20n, hash: "0xb" });
  await settle();
  expect(calls).toEqual(["read 16 0xa", "read 20 0xb"]);
  expect(epoch.vouchedUpTo).toBe(20n);
  expect(values.get("eth:1")).toBe(`${token} 20 0xb`);
});

it("the same finalized block read again is not recorded again, and makes one read per maxAgeMs", async () => {
  const { store, calls } = memoryEpochs();
  const { head } = fakeHead({ number: 16n, hash: "0xa" }, new Map([[16n, "0xa"]]));
  const epoch = new SharedEpoch(store, head, 30);
  epoch.token("eth:1");
  await epoch.firstReading;
  await settle();
  const before = calls.length;
  for (let i = 0; i < 5; i++) {
    await new Promise((resolve) => setTimeout(resolve, 35));
    epoch.token("eth:1");
    await settle();
  }
  expect(calls.slice(before)).toEqual(Array(5).fill("read "));
});

it("a recorded block no longer on the node's chain replaces the token; one still there keeps it", async () => {
  const { store, values } = memoryEpochs();
  values.set("eth:1", "old 16 0xa");
  const kept = new SharedEpoch(store, fakeHead({ number: 16n, hash: "0xa" }, new Map([[16n, "0xa"]])).head, 60_000);
  kept.token("eth:1");
  await kept.firstReading;
  expect(kept.token("eth:1")).toBe("old");

  const rewound = new SharedEpoch(store, fakeHead({ number: 10n, hash: "0xc" }, new Map([[16n, "0xd"]])).head, 60_000);
  rewound.token("eth:1");
  await rewound.firstReading;
  await settle();
  const token = rewound.token("eth:1");
  expect(token).not.toBe("old");
  expect(token).toBeDefined();
  expect(values.get("eth:1")?.split(" ")[0]).toBe(token);
});

it("while the node cannot say whether the recorded block is still there, nothing is shared, and it is said once", async () => {
  const { store, values } = memoryEpochs();
  values.set("eth:1", "old 16 0xa");
  const told: unknown[] = [];
  const node = fakeHead({ number: 18n, hash: "0xc" }, new Map([[16n, "0xa"]]));
  node.setFailing(true);
  const epoch = new SharedEpoch(store, node.head, 15, (err) => told.push(err));
  for (let i = 0; i < 3; i++) {
    epoch.token("eth:1");
    await settle();
  }
  expect(epoch.token("eth:1")).toBeUndefined();
  expect(told).toHaveLength(1);
  node.setFailing(false);
  await settle();
  epoch.token("eth:1");
  await epoch.firstReading;
  expect(epoch.token("eth:1")).toBe("old");
});

it("a rewind replaces the token; while the store is unreachable nothing is shared, without retrying in a loop, and the old token is never taken back", async () => {
  const { store, values, calls, setReachable } = memoryEpochs();
  const { head } = fakeHead({ number: 16n, hash: "0xa" }, new Map([[16n, "0xa"]]));
  const epoch = new SharedEpoch(store, head, 30);
  epoch.token("eth:1");
  await epoch.firstReading;
  await settle();
  const old = epoch.token("eth:1");
  setReachable(false);
  epoch.rewound();
  expect(epoch.token("eth:1")).toBeUndefined();
  await settle();
  const bumps = calls.filter((c) => c === "bump").length;
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(calls.filter((c) => c === "bump").length).toBe(bumps);
  expect(epoch.token("eth:1")).toBeUndefined();
  setReachable(true);
  await new Promise((resolve) => setTimeout(resolve, 35));
  epoch.token("eth:1");
  await settle();
  const token = epoch.token("eth:1");
  expect(token).toBeDefined();
  expect(token).not.toBe(old);
  expect(values.get("eth:1")?.split(" ")[0]).toBe(token);
});

it("a replacement another process made first is taken, not made again", async () => {
  const { store, values } = memoryEpochs();
  const { head } = fakeHead({ number: 16n, hash: "0xa" }, new Map([[16n, "0xa"]]));
  const epoch = new SharedEpoch(store, head, 60_000);
  epoch.token("eth:1");
  await epoch.firstReading;
  await settle();
  values.set("eth:1", "theirs");
  epoch.rewound();
  await settle();
  expect(epoch.token("eth:1")).toBe("theirs");
});

it("a token replaced after a rewind has this process's finalized block beside it at once, which a process started after the next rewind checks", async () => {
  // Found from outside: the replacement wrote the token alone, and a process started after a second rewind (while no
  // process ran) had nothing to check, took the token, and served the answers stored in between.
  const { store, values } = memoryEpochs();
  const { head, move } = fakeHead({ number: 16n, hash: "0xa" }, new Map([[16n, "0xa"]]));
  const epoch = new SharedEpoch(store, head, 60_000);
  epoch.token("eth:1");
  await epoch.firstReading;
  await settle();
  move({ number: 12n, hash: "0xe" });
  epoch.rewound();
  await settle();
  const replaced = epoch.token("eth:1");
  expect(values.get("eth:1")).toBe(`${replaced} 12 0xe`);
  // Rewound again with no process running: block 12 is no longer 0xe.
  const later = new SharedEpoch(store, fakeHead({ number: 8n, hash: "0xf" }, new Map([[12n, "0x9"]])).head, 60_000);
  later.token("eth:1");
  await later.firstReading;
  await settle();
  expect(later.token("eth:1")).toBeDefined();
  expect(later.token("eth:1")).not.toBe(replaced);
});

it("after a pause of twice maxAgeMs, the token is read again before it is used: another process may have replaced it meanwhile", async () => {
  // Found from outside: a process idle for 26 s served, at its first call, an answer another process had set aside
  // (a rewind of blocks above this process's last finalized reading, which its own reading could not see).
  const { store, values } = memoryEpochs();
  const { head } = fakeHead({ number: 16n, hash: "0xa" }, new Map([[16n, "0xa"], [20n, "0xb"]]));
  const epoch = new SharedEpoch(store, head, 30);
  epoch.token("eth:1");
  await epoch.firstReading;
  await settle();
  expect(epoch.token("eth:1")).toBeDefined();
  values.set("eth:1", "theirs 20 0xb");
  await new Promise((resolve) => setTimeout(resolve, 70));
  expect(epoch.token("eth:1")).toBeUndefined();
  await epoch.firstReading;
  expect(epoch.token("eth:1")).toBe("theirs");
});

it("two chains with one past: the second to record a final block after they split checks the first's and replaces the token; they never both use one token past the split", async () => {
  // Found from outside: the second recorded its block over the first's unchecked (a fork of one chain, same chain id and
  // genesis), and each served the other's newest final blocks until its next reading.
  const { store, values } = memoryEpochs();
  const past = new Map([[16n, "0xa"]]);
  const a = fakeHead({ number: 16n, hash: "0xa" }, new Map([...past, [20n, "0xa20"]]));
  const b = fakeHead({ number: 16n, hash: "0xa" }, new Map([...past, [20n, "0xb20"]]));
  const [onA, onB] = [new SharedEpoch(store, a.head, 60_000), new SharedEpoch(store, b.head, 60_000)];
  for (const epoch of [onA, onB]) {
    epoch.token("eth:1");
    await epoch.firstReading;
  }
  await settle();
  expect(onB.token("eth:1")).toBe(onA.token("eth:1"));
  expect([onA.vouchedUpTo, onB.vouchedUpTo]).toEqual([16n, 16n]);
  a.move({ number: 20n, hash: "0xa20" });
  await settle();
  expect(onA.vouchedUpTo).toBe(20n);
  // B's own block 20 is not recorded over A's: A's is checked on B's chain, where it is not.
  b.move({ number: 20n, hash: "0xb20" });
  expect(onB.vouchedUpTo).toBe(16n);
  await settle();
  const tokenB = onB.token("eth:1");
  expect(tokenB).toBeDefined();
  expect(tokenB).not.toBe(onA.token("eth:1"));
  expect(values.get("eth:1")).toBe(`${tokenB} 20 0xb20`);
  expect(onB.vouchedUpTo).toBe(20n);
});

it("a final block recorded by another process that this process's node does not have yet keeps the token, used only up to the block it checked", async () => {
  const { store, values } = memoryEpochs();
  const past = new Map([[16n, "0xa"]]);
  const ahead = fakeHead({ number: 16n, hash: "0xa" }, new Map([...past, [20n, "0xa20"]]));
  const behind = fakeHead({ number: 16n, hash: "0xa" }, past);
  const [onAhead, onBehind] = [new SharedEpoch(store, ahead.head, 60_000), new SharedEpoch(store, behind.head, 30)];
  for (const epoch of [onAhead, onBehind]) {
    epoch.token("eth:1");
    await epoch.firstReading;
  }
  ahead.move({ number: 20n, hash: "0xa20" });
  await settle();
  const token = onAhead.token("eth:1");
  expect(values.get("eth:1")).toBe(`${token} 20 0xa20`);
  await new Promise((resolve) => setTimeout(resolve, 35));
  onBehind.token("eth:1");
  await settle();
  expect(onBehind.token("eth:1")).toBe(token);
  expect(onBehind.vouchedUpTo).toBe(16n);
});

it("a process whose node lags the final block recorded beside the token keeps out of the store without replacing the token, and joins once its node has that block, even after the record moved on", async () => {
  // Found from outside: a process whose node lagged the others by more than head - finalized replaced the token as it
  // started (the recorded block was not on its node's chain yet), and every process's stored answers were set aside.
  const { store, values, calls } = memoryEpochs();
  values.set("eth:1", "old 136 0xa136");
  const chain = new Map([[36n, "0xa36"]]);
  const lagging = fakeHead({ number: 36n, hash: "0xa36" }, chain);
  const epoch = new SharedEpoch(store, lagging.head, 30);
  for (let i = 0; i < 3; i++) {
    epoch.token("eth:1");
    await new Promise((resolve) => setTimeout(resolve, 35));
  }
  expect(epoch.token("eth:1")).toBeUndefined();
  expect(epoch.vouchedUpTo).toBe(-1n);
  expect(epoch.firstReading).toBeUndefined();
  expect(calls).not.toContain("bump");
  expect(values.get("eth:1")).toBe("old 136 0xa136");
  // The others move on; its node reaches block 136 (the same block), not 196.
  values.set("eth:1", "old 196 0xa196");
  chain.set(136n, "0xa136");
  lagging.move({ number: 72n, hash: "0xa72" });
  await new Promise((resolve) => setTimeout(resolve, 35));
  epoch.token("eth:1");
  await settle();
  expect(epoch.token("eth:1")).toBe("old");
  // Block 136 is not final on its node (72): its own final blocks are vouched for, not 136 (see the next test).
  expect(epoch.vouchedUpTo).toBe(72n);
  expect(calls).not.toContain("bump");
  expect(values.get("eth:1")).toBe("old 196 0xa196");
  // Its own newer final block is not recorded over 196, which it has not checked; 196 is checked once its node has it,
  // though the others recorded 256 meanwhile (a node that always lags still moves on).
  values.set("eth:1", "old 256 0xa256");
  await new Promise((resolve) => setTimeout(resolve, 35));
  epoch.token("eth:1");
  await settle();
  chain.set(196n, "0xa196");
  lagging.move({ number: 150n, hash: "0xa150" });
  await settle();
  await new Promise((resolve) => setTimeout(resolve, 35));
  epoch.token("eth:1");
  await settle();
  expect(epoch.token("eth:1")).toBe("old");
  // 196 is on its node's chain but not final there (150): used up to 150.
  expect(epoch.vouchedUpTo).toBe(150n);
  expect(values.get("eth:1")).toBe("old 256 0xa256");
  expect(calls).not.toContain("bump");
});

it("a node rewound to fewer blocks (same genesis) keeps out of the store until it has the recorded block, then replaces the token, seeing another hash there", async () => {
  const { store, values, calls } = memoryEpochs();
  values.set("eth:1", "old 136 0xa136");
  const chain = new Map([[36n, "0xb36"]]);
  const rewound = fakeHead({ number: 36n, hash: "0xb36" }, chain);
  const epoch = new SharedEpoch(store, rewound.head, 30);
  epoch.token("eth:1");
  await settle();
  expect(epoch.token("eth:1")).toBeUndefined();
  expect(values.get("eth:1")).toBe("old 136 0xa136");
  chain.set(136n, "0xb136");
  rewound.move({ number: 72n, hash: "0xb72" });
  await new Promise((resolve) => setTimeout(resolve, 35));
  epoch.token("eth:1");
  await settle();
  const token = epoch.token("eth:1");
  expect(token).toBeDefined();
  expect(token).not.toBe("old");
  expect(calls).toContain("bump");
  expect(values.get("eth:1")).toBe(`${token} 72 0xb72`);
  expect(epoch.vouchedUpTo).toBe(72n);
});

it("a recorded block its node has but not as final is not vouched for: the node may still replace it, unseen as a rewind", async () => {
  // Found from outside: a process vouched for another's final block 136 that its node had above its own final block
  // (116); its dev node was then reverted to 125 and built other blocks, and it served the other's blocks 126..136.
  const { store, values, calls } = memoryEpochs();
  values.set("eth:1", "old 136 0xa136");
  const chain = new Map([[116n, "0xa116"], [136n, "0xa136"]]);
  const b = fakeHead({ number: 116n, hash: "0xa116" }, chain);
  const epoch = new SharedEpoch(store, b.head, 30);
  epoch.token("eth:1");
  await settle();
  expect(epoch.token("eth:1")).toBe("old");
  expect(epoch.vouchedUpTo).toBe(116n);
  expect(values.get("eth:1")).toBe("old 136 0xa136");
  // Reverted above its final block, other blocks built: 136 is now another block, final on its node.
  chain.set(136n, "0xb136");
  chain.set(146n, "0xb146");
  b.move({ number: 146n, hash: "0xb146" });
  await settle();
  await new Promise((resolve) => setTimeout(resolve, 35));
  epoch.token("eth:1");
  await settle();
  // 136 is checked again now final on its node, under another hash: the token is replaced, its own block beside it.
  expect(calls).toContain("bump");
  const token = epoch.token("eth:1");
  expect(token).not.toBe("old");
  expect(values.get("eth:1")).toBe(`${token} 146 0xb146`);
});
