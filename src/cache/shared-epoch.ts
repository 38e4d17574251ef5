/**
 * The token a shared store's keys carry for one network's chain, kept in the
 * store so that every process agrees on it. A process that sees the chain's
 * finality go back replaces it, for all: answers stored before are never
 * read again. A process that starts reads it, and first checks that the last
 * final block recorded beside it is still on the node's chain; if not, the
 * chain was rewound while nobody watched, and it replaces the token too.
 * Found from outside: each process numbered the rewinds it had seen itself,
 * so one started after a dev chain's rewind (or one that had seen another
 * number of them) read the answers stored before it, for up to 24 hours.
 * A recorded block its node does not have yet (a node that lags, or one
 * rewound to fewer blocks: they cannot be told apart until it has the block)
 * keeps the process out of the store, the token left in place, until its
 * node has that block: then it joins (same hash) or replaces the token.
 */
import { randomBytes } from "node:crypto";
import type { ChainHead } from "../upstream/chain-head.js";
import type { EpochStore } from "./store.js";

/** A token no stored answer carries yet. */
function freshToken(): string {
  return randomBytes(9).toString("base64url");
}

/** "<token>" or "<token> <number> <hash>": the token, what follows it as written, and the final block it names. */
function parse(text: string): { token: string; rest: string; anchor: { number: bigint; hash: string } | undefined } {
  const space = text.indexOf(" ");
  const token = space < 0 ? text : text.slice(0, space);
  const rest = space < 0 ? "" : text.slice(space + 1);
  const [number, hash, extra] = rest.split(" ");
  if (number === undefined || hash === undefined || extra !== undefined || !/^\d+$/.test(number)) return { token, rest, anchor: undefined };
  return { token, rest, anchor: { number: BigInt(number), hash } };
}

export class SharedEpoch {
  readonly #store: EpochStore;
  readonly #head: ChainHead;
  readonly #maxAgeMs: number;
  readonly #onUnchecked: (err: unknown) => void;
  #scope: string | undefined;
  /** Undefined until read (and, the first time, checked), and while a rewind's replacement is under way. */
  #token: string | undefined;
  /** The highest block whose answers this process may look up or store under #token (see vouchedUpTo); -1: none. */
  #vouched = -1n;
  /**
   * What the store had beside #token when last read, as written ("" for nothing), once this process vouched for it
   * (its own final block, or one found on its node's chain); undefined before. Its own block is recorded only over it.
   */
  #seen: string | undefined;
  /**
   * A final block recorded beside the token (held or not) that this process's node did not have (it lags the others,
   * or was rewound to fewer blocks): the first such block seen, the lowest, which the node reaches first. Checked once
   * the node has it, even after another process recorded a newer block beside the token (every block recorded beside a
   * token is on the chain of the one before it). Found from outside: a process whose node lagged by more than
   * head - finalized replaced the token as it started, and every process's stored answers were set aside.
   */
  #pending: { token: string; rest: string; anchor: { number: bigint; hash: string } } | undefined;
  #readAt = Number.NEGATIVE_INFINITY;
  /** When the read (or replacement) that last confirmed #token was sent. */
  #confirmedAt = Number.NEGATIVE_INFINITY;
  /** The read or replacement under way. */
  #syncing: Promise<void> | undefined;
  /** Whether a token was ever known (before, a first call waits for the reading: firstReading). */
  #known = false;
  /** Something changed while a sync was under way (a finalized block to record): sync again after it. */
  #again = false;
  /** Rewinds seen: a reading that began before the last one is not used. */
  #rewinds = 0;
  /** A replacement still to be made: the token this process held when it saw the rewind (undefined: whatever is there). */
  #owed: { mine: string | undefined } | undefined;
  #toldUnchecked = false;

  /** `maxAgeMs`: how stale the token may be (another process's replacement is seen within it while calls come). */
  constructor(store: EpochStore, head: ChainHead, maxAgeMs: number, onUnchecked: (err: unknown) => void = () => {}) {
    this.#store = store;
    this.#head = head;
    this.#maxAgeMs = maxAgeMs;
    this.#onUnchecked = onUnchecked;
    // Recorded as soon as read, not at the next sync: answers of a newly final block are neither looked up nor stored
    // until it is recorded, and the recorded block is what a process started after a rewind checks.
    head.onFinalizedMoved(() => {
      if (this.#scope !== undefined && this.#token !== undefined) this.#sync();
    });
  }

  /**
   * The token keys carry for `scope` (the network and its chain); undefined while it is not known, when nothing may be
   * looked up or stored. Read again in the background when older than maxAgeMs. Another scope than before (the node
   * serves another chain: a dev node restarted afresh, see ChainIdentity.forget) is taken up as a process that starts
   * takes it up: its token read and checked, nothing held for the chain before used under it.
   */
  token(scope: string): string | undefined {
    if (scope !== this.#scope) this.#rescope(scope);
    const now = performance.now();
    if (now - this.#readAt >= this.#maxAgeMs) this.#sync();
    // After a pause of twice maxAgeMs or more, another process may have replaced the token meanwhile (a rewind of blocks
    // above this process's last finalized reading, which its own next reading cannot see): not used until read again.
    if (now - this.#confirmedAt >= 2 * this.#maxAgeMs) return undefined;
    return this.#token;
  }

  /**
   * The highest block whose answers may be looked up or stored under the token (-1: none): one recorded beside it
   * that this process found on its node's chain, or recorded itself over one it had found there. Every process
   * vouches so for each block it records, so any two processes using the token agree on every block up to the lower
   * of their two: two chains that share a name and a past (a fork, or nodes started with one genesis) never read each
   * other's blocks after they split. Found from outside: a process recorded its newer final block over the other
   * chain's unchecked, and each served the other's newest final blocks until its next reading.
   */
  get vouchedUpTo(): bigint {
    return this.#vouched;
  }

  /** The first reading, while it is under way: the first calls wait for it (a store's answer is not missed at start). */
  get firstReading(): Promise<void> | undefined {
    // Kept out until its node has the block recorded beside the token: a reading would not let calls use the store.
    if (this.#pending !== undefined && this.#token === undefined) return undefined;
    return this.#known && performance.now() - this.#confirmedAt < 2 * this.#maxAgeMs ? undefined : this.#syncing;
  }

  #rescope(scope: string): void {
    const before = this.#scope;
    this.#scope = scope;
    if (before === undefined) return;
    // What is under way for the chain before is not used (a replacement of its token still lands, and is harmless).
    this.#rewinds++;
    this.#owed = undefined;
    this.#token = undefined;
    this.#vouched = -1n;
    this.#seen = undefined;
    this.#pending = undefined;
    this.#known = false;
    this.#readAt = Number.NEGATIVE_INFINITY;
    this.#confirmedAt = Number.NEGATIVE_INFINITY;
  }

  /** This process saw the chain's finality go back: the token is replaced for every process. */
  rewound(): void {
    this.#rewinds++;
    // Not known yet (a first reading under way): replaced whatever it is, since it may predate what was seen.
    this.#owed = { mine: this.#token };
    this.#token = undefined;
    this.#vouched = -1n;
    this.#seen = undefined;
    this.#pending = undefined;
    if (this.#scope !== undefined) this.#sync();
  }

  /** One read (or replacement) at a time; what asks for one meanwhile gets another after it. */
  #sync(): void {
    const scope = this.#scope;
    if (scope === undefined) return;
    if (this.#syncing !== undefined) {
      this.#again = true;
      return;
    }
    this.#again = false;
    this.#readAt = performance.now();
    const step = this.#owed !== undefined ? this.#replace(scope) : this.#read(scope);
    this.#syncing = step
      .catch(() => {})
      .finally(() => {
        this.#syncing = undefined;
        // Not again at once for a replacement that failed (the store unreachable): it waits for the next token().
        if (this.#again) this.#sync();
      });
  }

  async #read(scope: string): Promise<void> {
    const rewinds = this.#rewinds;
    const sentAt = performance.now();
    const mine = this.#token;
    const seen = this.#seen;
    const final = this.#head.finalizedBlock;
    const own = final === undefined ? undefined : `${final.number} ${final.hash}`;
    // This process's final block is recorded (beside a token just made, or over the block it vouched for, when higher).
    const record = final !== undefined && (mine === undefined || (seen !== undefined && final.number > this.#vouched)) ? own : undefined;
    const text = await this.#store.readEpoch(scope, freshToken(), mine, record, seen);
    if (text === undefined || rewinds !== this.#rewinds) return;
    const read = parse(text);
    const token = read.token;
    let { rest, anchor: recorded } = read;
    const sameToken = token === mine && mine !== undefined;
    let vouched = -1n;
    if (recorded !== undefined) {
      if (rest === own || (sameToken && rest === seen)) vouched = recorded.number;
      else {
        // Every final block recorded beside the token by another process is checked on this process's node before
        // the token is used: a process on another chain under the same name (an Anvil forked from this one, or one
        // without block 0, same chain id) replaces the token with its own block beside it (found from outside).
        let hash: string | null;
        // Read before the hash is asked for: a block final then is final in the hash the node gives.
        const lastFinal = this.#head.lastFinalized;
        try {
          hash = await this.#head.hashAt(recorded.number);
        } catch (err) {
          // The node cannot say now: nothing is shared until it can (asked again at the next reading).
          if (!this.#toldUnchecked) this.#onUnchecked(err);
          this.#toldUnchecked = true;
          this.#token = undefined;
          return;
        }
        if (rewinds !== this.#rewinds) return;
        // A recorded block its node has under the same hash, but not as final yet, is not vouched for either: a dev node
        // may still replace it (evm_revert or anvil_rollback above its final block, another node behind the same URL),
        // which is never seen as a rewind; vouched for, the other chain's answers stored about it were served (found
        // from outside). Its node's own final blocks, under it, are vouched for. Under another hash, the token is
        // replaced at once (a replacement is never wrong, only costly).
        const above = (n: bigint) => lastFinal === undefined || n > lastFinal;
        if (hash === null ? above(recorded.number) : above(recorded.number) && hash === recorded.hash) {
          // Ahead of this process's node: what it vouched for under the same token still holds. Another token is neither
          // used nor replaced until the node has a block recorded beside it: a node that lags the others cannot be told
          // from one rewound to fewer blocks (a dev chain restarted from its genesis) before then. The lowest such block
          // its node lacked is checked once the node has it, whatever was recorded since (a node that always lags still
          // moves on).
          let anchor = recorded;
          const pending = this.#pending?.token === token ? this.#pending : undefined;
          if (hash === null && pending !== undefined && pending.anchor.number < recorded.number) {
            anchor = pending.anchor;
            try {
              hash = await this.#head.hashAt(anchor.number);
            } catch {
              hash = null;
            }
            if (rewinds !== this.#rewinds) return;
          }
          if (hash === null || lastFinal === undefined) {
            if (pending === undefined) this.#pending = { token, rest, anchor: recorded };
            if (sameToken) this.#confirmedAt = sentAt;
            else this.#token = undefined;
            return;
          }
          if (hash === anchor.hash) {
            // Used up to that block or its node's final block, the lower; its own block is not recorded over the token's
            // (seen unset) until the block recorded there is final on its node. Next, the record its node lacks, if any.
            this.#pending = anchor === recorded ? undefined : { token, rest, anchor: recorded };
            const upTo = anchor.number < lastFinal ? anchor.number : lastFinal;
            this.#token = token;
            this.#vouched = sameToken && this.#vouched > upTo ? this.#vouched : upTo;
            this.#seen = undefined;
            this.#confirmedAt = sentAt;
            this.#known = true;
            return;
          }
          // Its node has that block under another hash.
          recorded = anchor;
        }
        this.#pending = undefined;
        if (hash !== recorded.hash) {
          // Rewound while this process did not watch, or another chain's: what was stored under it is set aside for all.
          this.#token = undefined;
          this.#owed = { mine: token };
          this.#again = true;
          return;
        }
        vouched = recorded.number;
      }
    }
    this.#pending = undefined;
    this.#token = token;
    this.#vouched = sameToken && this.#vouched > vouched ? this.#vouched : vouched;
    this.#seen = rest;
    this.#confirmedAt = sentAt;
    this.#known = true;
    // This process's newer final block is recorded next, over what was just vouched for; not again after the store
    // kept what it had although it was as expected (a block number past what the store's script can compare).
    const latest = this.#head.finalizedBlock;
    const refused = record !== undefined && sameToken && rest === seen && rest !== record;
    if (latest !== undefined && latest.number > this.#vouched && !refused) this.#again = true;
  }

  async #replace(scope: string): Promise<void> {
    const rewinds = this.#rewinds;
    const sentAt = performance.now();
    const owed = this.#owed;
    if (owed === undefined) return;
    // The new token is recorded with this process's (post-rewind) final block at once: a token with no block beside it
    // cannot be checked by a process that starts after the next rewind, which would adopt it and its answers.
    const final = this.#head.finalizedBlock;
    const anchor = final === undefined ? "" : `${final.number} ${final.hash}`;
    const fresh = freshToken();
    const text = await this.#store.bumpEpoch(scope, owed.mine, fresh, anchor);
    if (text === undefined || rewinds !== this.#rewinds) return;
    this.#owed = undefined;
    const { token } = parse(text);
    this.#token = token;
    this.#confirmedAt = sentAt;
    this.#known = true;
    if (token === fresh) {
      this.#vouched = final?.number ?? -1n;
      this.#seen = anchor;
    } else {
      // Another process's replacement: nothing under it is used before what it recorded is checked (read at once).
      this.#vouched = -1n;
      this.#seen = undefined;
      this.#again = true;
    }
  }
}
