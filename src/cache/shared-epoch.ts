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
 */
import { randomBytes } from "node:crypto";
import type { ChainHead } from "../upstream/chain-head.js";
import type { EpochStore } from "./store.js";

/** A token no stored answer carries yet. */
function freshToken(): string {
  return randomBytes(9).toString("base64url");
}

/** "<token>" or "<token> <number> <hash>": the token, and the final block recorded beside it. */
function parse(text: string): { token: string; anchor: { number: bigint; hash: string } | undefined } {
  const [token = "", number, hash] = text.split(" ");
  if (number === undefined || hash === undefined || !/^\d+$/.test(number)) return { token, anchor: undefined };
  return { token, anchor: { number: BigInt(number), hash } };
}

export class SharedEpoch {
  readonly #store: EpochStore;
  readonly #head: ChainHead;
  readonly #maxAgeMs: number;
  readonly #onUnchecked: (err: unknown) => void;
  #scope: string | undefined;
  /** Undefined until read (and, the first time, checked), and while a rewind's replacement is under way. */
  #token: string | undefined;
  /** Whether the final block recorded beside the token was checked against the node's chain (once per process). */
  #checked = false;
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
  /** The final block this process last recorded ("<number> <hash>"). */
  #recorded: string | undefined;
  /** A replacement still to be made: the token this process held when it saw the rewind (undefined: whatever is there). */
  #owed: { mine: string | undefined } | undefined;
  #toldUnchecked = false;
  /** The last final block recorded by another process that this process found on its node's chain. */
  #verified: string | undefined;

  /** `maxAgeMs`: how stale the token may be (another process's replacement is seen within it while calls come). */
  constructor(store: EpochStore, head: ChainHead, maxAgeMs: number, onUnchecked: (err: unknown) => void = () => {}) {
    this.#store = store;
    this.#head = head;
    this.#maxAgeMs = maxAgeMs;
    this.#onUnchecked = onUnchecked;
    // Recorded as soon as read, not at the next sync: answers are stored as final up to the latest reading, and the
    // recorded block is what a process started after a rewind checks.
    head.onFinalizedMoved(() => {
      if (this.#scope !== undefined && this.#token !== undefined) this.#sync();
    });
  }

  /**
   * The token keys carry for `scope` (the network and its chain, which do not change once known); undefined while
   * it is not known, when nothing may be looked up or stored. Read again in the background when older than maxAgeMs.
   */
  token(scope: string): string | undefined {
    this.#scope ??= scope;
    const now = performance.now();
    if (now - this.#readAt >= this.#maxAgeMs) this.#sync();
    // After a pause of twice maxAgeMs or more, another process may have replaced the token meanwhile (a rewind of blocks
    // above this process's last finalized reading, which its own next reading cannot see): not used until read again.
    if (now - this.#confirmedAt >= 2 * this.#maxAgeMs) return undefined;
    return this.#token;
  }

  /** The first reading, while it is under way: the first calls wait for it (a store's answer is not missed at start). */
  get firstReading(): Promise<void> | undefined {
    return this.#known && performance.now() - this.#confirmedAt < 2 * this.#maxAgeMs ? undefined : this.#syncing;
  }

  /** This process saw the chain's finality go back: the token is replaced for every process. */
  rewound(): void {
    this.#rewinds++;
    // Not known yet (a first reading under way): replaced whatever it is, since it may predate what was seen.
    this.#owed = { mine: this.#token };
    this.#token = undefined;
    this.#recorded = undefined;
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
    const final = this.#head.finalizedBlock;
    const anchor = final === undefined ? undefined : `${final.number} ${final.hash}`;
    const record = mine !== undefined && anchor !== this.#recorded ? anchor : undefined;
    const text = await this.#store.readEpoch(scope, freshToken(), mine, record);
    if (text === undefined || rewinds !== this.#rewinds) return;
    const { token, anchor: recorded } = parse(text);
    // Every final block recorded beside the token by another process is checked on this process's node before the
    // token is used, not only the one found at start: a process on another chain under the same name (an Anvil forked
    // from this one, or one without block 0, same chain id) replaces the token with its own block beside it, and taking
    // its token unchecked served its blocks as this chain's (found from outside).
    const anchorText = recorded === undefined ? undefined : `${recorded.number} ${recorded.hash}`;
    if (recorded !== undefined && anchorText !== this.#recorded && anchorText !== anchor && anchorText !== this.#verified) {
      let hash: string | null;
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
      const final = this.#head.lastFinalized;
      if (hash === null && this.#checked && (final === undefined || recorded.number > final)) {
        // Ahead of this process's node (a lagging backend, or another chain): not used until it can be told.
        this.#token = undefined;
        return;
      }
      if (hash !== recorded.hash) {
        // Rewound while this process did not watch, or another chain's: what was stored under it is set aside for all.
        this.#checked = true;
        this.#token = undefined;
        this.#owed = { mine: token };
        this.#again = true;
        return;
      }
      this.#verified = anchorText;
    }
    this.#checked = true;
    if (token !== mine) this.#recorded = undefined;
    this.#token = token;
    this.#confirmedAt = sentAt;
    this.#known = true;
    // Recorded only if the token was still this process's (see EpochStore.readEpoch); a token just adopted gets this
    // process's reading recorded beside it at once.
    if (record !== undefined && token === mine) this.#recorded = record;
    if (anchor !== undefined && anchor !== this.#recorded) this.#again = true;
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
    this.#recorded = token === fresh && anchor !== "" ? anchor : undefined;
    if (this.#recorded === undefined && final !== undefined) this.#again = true;
    this.#known = true;
  }
}
