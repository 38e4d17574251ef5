/**
 * The canonical chain of one network, header by header: from the node's
 * newHeads subscription over WebSocket, or by polling the latest block over
 * HTTP. Either way every header is checked against the recent chain: one
 * that continues it is sent on; one that skips blocks (a node that reports
 * only the last of a batch, a reconnect, a poll interval) has the missing
 * headers fetched by parent hash and sent first; one from another branch is
 * a reorganization, and the new branch is sent from the fork point. Logs
 * feeds follow this chain to take back logs of blocks it dropped.
 */
import { backfillTooLong, historyLost, NODEGATE_CODES, reorgTooDeep, upstreamBadResponse } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import { isOutage } from "../upstream/network.js";
import type { WsUpstream } from "../upstream/ws-upstream.js";
import { BlockWindow } from "./block-window.js";
import { type HeadEvent, readHead } from "./events.js";
import { type Deliver, Feed, type FeedContext, isHistoryLost, nodeRefused } from "./feed.js";
import { Poller } from "./poller.js";
import { UpstreamSubscription } from "./upstream-subscription.js";
import type { CallSignal } from "../call-signal.js";

/** How the chain moved with one new head. */
export interface ChainChange {
  head: HeadEvent;
  /** The headers that became canonical, in order, ending with `head` (more than one after a gap or a reorganization). */
  branch: readonly HeadEvent[];
  /** Set when blocks the feed had passed were replaced: the last block both branches share. */
  reorg?: { ancestor: number } | undefined;
  /** Blocks the feed had passed above `head` that a shorter new branch left out, with their (old) hashes. */
  dropped?: readonly { number: number; hash: string }[] | undefined;
  /** Blocks the feed had passed that `branch` replaced at their heights, with their (old) hashes. */
  replaced?: readonly { number: number; hash: string }[] | undefined;
  /**
   * Set when the feed could not follow the chain up to `head` (a new branch forked below the remembered window, or
   * more blocks went by than maxBackfillBlocks): its subscribers were ended with this error, and the feed goes on
   * from `head`, as for a first subscriber.
   */
  startedOver?: GatewayError | undefined;
}

export type ChainListener = (change: ChainChange) => void;

/**
 * A gap's headers asked at one poll once the node served only some of them (a rate limit), lowest first; doubled at
 * each poll it serves them all, until GAP_STEP_WHOLE, from where the whole gap is asked again.
 */
const GAP_STEP_AFTER_REFUSAL = 2;
const GAP_STEP_WHOLE = 64;

/** Headers fetched at once when a resuming client needs many. */
const HISTORY_BATCH = 8;

export class HeadsFeed extends Feed {
  readonly #window: BlockWindow;
  readonly #chainListeners = new Set<ChainListener>();
  #current: HeadEvent | undefined;
  /** The first block the feed passed: blocks below the window but not below this were passed, and may have been sent. */
  #firstPassed: number | undefined;
  #subscription: UpstreamSubscription | undefined;
  #poller: Poller | undefined;
  /** Headers fetched for a gap not linked yet, by number: kept across tries (ChainReader.headsByNumber). */
  readonly #gapHeaders = new Map<number, HeadEvent>();
  /** How many of a gap's missing headers a poll asks for (GAP_STEP_AFTER_REFUSAL): all but after a partial refusal. */
  #gapStep = Number.POSITIVE_INFINITY;
  /** Called once the next catch-up asked for by resync() is done. */
  readonly #resyncWaiters: (() => void)[] = [];
  /**
   * The hash of the node's genesis block, learnt when the feed starts: a chain that no longer links to the window is
   * a fresh chain when its genesis block is another (#isFreshChain). "" when the node gives none (never compared);
   * undefined until it answered.
   */
  #genesis: string | undefined;
  #learningGenesis = false;

  constructor(ctx: FeedContext) {
    super({ kind: "newHeads" }, ctx);
    this.#window = new BlockWindow(ctx.settings.reorgWindowBlocks);
  }

  /** The latest canonical header the feed has passed. */
  get current(): HeadEvent | undefined {
    return this.#current;
  }

  get position(): number | undefined {
    return this.#current?.number;
  }

  /** Calls `listener` after each head is processed; returns the function that stops it. */
  onChain(listener: ChainListener): () => void {
    this.#chainListeners.add(listener);
    return () => this.#chainListeners.delete(listener);
  }

  /**
   * Resolves once the feed has passed block `number`, `signal` aborts, or
   * `maxMs` went by, whichever comes first.
   */
  reached(number: number, signal: CallSignal, maxMs: number): Promise<void> {
    if ((this.position ?? -1) >= number || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        stopListening();
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      const stopListening = this.onChain(() => {
        if ((this.position ?? -1) >= number) done();
      });
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * Catches up with the node's head, then calls `then`: by that time every
   * chain change the catch-up found (a reorganization while the node's
   * connection was down) has reached the chain listeners. A logs feed fills
   * its reconnect gap after this, so that what a reorganization replaced is
   * taken back before the new branch's logs go out. Retried until done.
   */
  resync(then: () => void): void {
    this.#resyncWaiters.push(then);
    const notify = () => {
      for (const waiter of this.#resyncWaiters.splice(0)) waiter();
    };
    this.runUntilDone("catching up on headers for the logs feeds", async () => {
      try {
        await this.#catchUp();
      } catch (err) {
        // The subscribers of this feed are ended; the logs feeds fill their gap as far as the node lets them.
        if (isHistoryLost(err)) notify();
        throw err;
      }
      notify();
    }, this.holdingRetryMaxMs);
  }

  start(): Promise<void> {
    // Queued, so that headers the node pushes meanwhile wait until the starting point is set.
    return this.queue(async () => {
      // The starting point comes first: anything the node pushes after it links to it, or is a gap that gets filled.
      this.#accept(await this.ctx.reader.latestHead());
      // Beside the starting point, not before it: the first subscriber does not wait for it.
      this.#learnGenesis();
      if (this.ctx.ws === undefined) {
        this.#startPolling();
        return;
      }
      await this.#subscribe(this.ctx.ws);
    });
  }

  async #subscribe(ws: WsUpstream): Promise<void> {
    this.#subscription = new UpstreamSubscription(
      this.ctx.network,
      ws,
      '["newHeads"]',
      {
        notification: (text) =>
          void this.run("a pushed header", async () => {
            try {
              await this.#onHead(readHead(text));
            } catch (err) {
              if (isHistoryLost(err)) throw err;
              // Filling the gap failed; the next header may be a while coming, so catch up without waiting for it.
              this.ctx.log.warn({ network: this.ctx.network.name, err: (err as Error).message }, "following a pushed header failed; retrying");
              this.runUntilDone("catching up on headers", () => this.#catchUp());
            }
          }),
        disconnected: () => {},
        reconnected: () =>
          this.runUntilDone("resubscribing to newHeads after a reconnect", async () => {
            try {
              await this.#subscription?.renew();
            } catch (err) {
              // Heads are polled until the node takes the subscription again.
              if (nodeRefused(err)) this.#pollUntilSubscribed();
              throw err;
            }
            this.#poller?.stop();
            this.#poller = undefined;
            await this.#catchUp();
          }),
      },
      this.ctx.log,
    );
    await this.#subscription.open();
  }

  #startPolling(): void {
    this.#poller = new Poller(this.ctx.settings.pollIntervalMs, () => this.run("polling the latest block", () => this.#catchUp()));
    this.#poller.start();
  }

  #pollUntilSubscribed(): void {
    if (this.#poller !== undefined) return;
    this.#startPolling();
    void this.run("polling the latest block", () => this.#catchUp());
  }

  protected async shutdown(): Promise<void> {
    this.#poller?.stop();
    await this.#subscription?.close();
  }

  async history(fromBlock: number, deliver: Deliver, signal: CallSignal): Promise<number | undefined> {
    const head = this.#current;
    if (head === undefined || fromBlock > head.number) return undefined;
    const max = this.ctx.settings.maxBackfillBlocks;
    if (head.number - fromBlock > max) throw backfillTooLong(fromBlock, head.number, max);
    // The hashes sent, by number, and the headers sent that the window could hold (at most its size below the head).
    const sent = new Map<number, string>();
    const recent = new Map<number, HeadEvent>();
    const recentFrom = head.number - this.ctx.settings.reorgWindowBlocks;
    let last: HeadEvent | undefined;
    const send = async (header: HeadEvent) => {
      await deliver(header);
      sent.set(header.number, header.hash);
      if (header.number >= recentFrom) recent.set(header.number, header);
      last = header;
    };
    reading: for (let start = fromBlock; start <= head.number && !signal.aborted; start += HISTORY_BATCH) {
      const numbers = Array.from({ length: Math.min(HISTORY_BATCH, head.number - start + 1) }, (_, i) => start + i);
      const batch = await Promise.all(numbers.map((n) => this.historyRead(() => this.ctx.reader.headByNumber(n), signal)));
      for (const [i, header] of batch.entries()) {
        if (header === undefined) {
          // A shorter branch replaced the blocks being read: the feed's own branch follows (see below).
          if (last !== undefined) break reading;
          throw upstreamBadResponse(`eth_getBlockByNumber: the node has no block ${numbers[i]}`);
        }
        // The chain changed between two reads by number: the history goes on along the new branch from its fork with
        // what was sent, as a live reorganization does (found from outside: the client kept the old branch's blocks
        // below the switch, and the next header's parent was one it never got).
        if (last !== undefined && header.parentHash !== last.hash) for (const replacing of await this.#branchBelow(header, sent, fromBlock)) await send(replacing);
        await send(header);
      }
    }
    if (signal.aborted || last === undefined) return head.number;
    // The feed's branch where the history ends, when the feed followed another than the history read.
    for (const replacing of await this.queue(() => this.#rejoin(fromBlock, sent, recent))) await send(replacing);
    return Math.max(head.number, (last as HeadEvent).number);
  }

  /**
   * The headers of `head`'s branch below it, from the first one not sent
   * (by number in `sent`) up: the fork with what was sent, or `fromBlock`.
   */
  async #branchBelow(head: HeadEvent, sent: ReadonlyMap<number, string>, fromBlock: number): Promise<HeadEvent[]> {
    const branch: HeadEvent[] = [];
    const max = this.ctx.settings.maxBackfillBlocks;
    let child = head;
    while (child.number - 1 >= fromBlock && sent.get(child.number - 1) !== child.parentHash) {
      if (branch.length >= max) throw historyLost(branch.length, max);
      const parent = await this.ctx.reader.headByHash(child.parentHash);
      if (parent === undefined) throw upstreamBadResponse(`the node does not know block ${child.parentHash}, the parent of block ${child.number}`);
      this.#checkFollows(child, parent);
      branch.unshift(parent);
      child = parent;
    }
    return branch;
  }

  /**
   * Run in the feed's queue once a history is sent: the feed catches up with
   * the node, and when it follows another branch than the one the history
   * ended on (a reorganization while the history was read), returns the
   * feed's branch from the fork with what was sent, for the history to send
   * too; then the window takes what was sent (#rememberSent).
   */
  async #rejoin(fromBlock: number, sent: Map<number, string>, recent: Map<number, HeadEvent>): Promise<HeadEvent[]> {
    try {
      await this.#catchUp();
    } catch {
      // The feed retries on its own; the history is judged against the chain as the feed has it.
    }
    let top = -1;
    for (const n of sent.keys()) if (n > top) top = n;
    const current = this.#current;
    let replacing: HeadEvent[] = [];
    if (current !== undefined) {
      const at = Math.min(top, current.number);
      const hash = this.#window.hash(at);
      const header = hash === undefined || hash === sent.get(at) ? undefined : hash === current.hash ? current : await this.ctx.reader.headByHash(hash);
      if (header !== undefined) {
        replacing = [...(await this.#branchBelow(header, sent, fromBlock)), header];
        for (const h of replacing) {
          sent.set(h.number, h.hash);
          if (recent.has(h.number) || h.number >= current.number - this.ctx.settings.reorgWindowBlocks) recent.set(h.number, h);
        }
      }
    }
    this.#rememberSent(fromBlock, recent);
    return replacing;
  }

  /**
   * A resuming client is sent history from `fromBlock`, which may be below
   * where the feed started: the window is made to reach down to it (at most
   * its size below the head), so that a reorganization among those blocks is
   * followed from its fork point (found from outside: a resumed client's
   * history blocks replaced by anvil_reorg were never sent again, and their
   * logs never taken back); see #rememberSent for what counts as sent.
   * `known`: headers already read; the others the window needs are read here, each tried again after a passing
   * refusal while `signal` (the resuming client's call) is live.
   */
  async reachDownTo(fromBlock: number, signal: CallSignal, known: ReadonlyMap<number, HeadEvent> = new Map()): Promise<void> {
    const lowest = this.#window.lowest;
    const highest = this.#window.highest;
    const headers = new Map(known);
    if (lowest !== undefined && highest !== undefined) {
      const floor = Math.max(fromBlock, highest.number - this.ctx.settings.reorgWindowBlocks + 1);
      const missing: number[] = [];
      for (let n = floor; n <= lowest; n++) if (!headers.has(n)) missing.push(n);
      // A passing refusal is tried again, as the history's own reads are (found from outside, h81: one 429 among these
      // reads ended a logs resume UNAVAILABLE with nothing sent).
      const read = (n: number) => this.historyRead(() => this.ctx.reader.headByNumber(n), signal);
      // As many at a time as the history reads: all of a window's at once was a burst a rate limit refused whole (h82).
      for (let i = 0; i < missing.length && !signal.aborted; i += HISTORY_BATCH) {
        for (const header of await Promise.all(missing.slice(i, i + HISTORY_BATCH).map(read))) if (header !== undefined) headers.set(header.number, header);
      }
    }
    // Behind the feed's other work: a reorganization it is following sees the window as it was, or as it is now.
    await this.queue(async () => this.#rememberSent(fromBlock, headers));
  }

  /**
   * Takes into the window the headers sent from `fromBlock` that link down
   * from its lowest block; those it takes count as sent once they leave it.
   * Headers that do not link (the chain changed between the reads) are left
   * out, and count for nothing: counted as sent below the window, a later
   * reorganization within the window was taken for one deeper than it, and
   * ended every subscriber (found from outside, on the first version).
   */
  #rememberSent(fromBlock: number, headers: ReadonlyMap<number, HeadEvent>): void {
    const lowest = this.#window.lowest;
    if (lowest === undefined || fromBlock >= lowest) return;
    // The headers must be of the chain the window holds, where they meet.
    let above = headers.get(lowest);
    if (above === undefined || above.hash !== this.#window.hash(lowest)) return;
    for (let n = lowest - 1; n >= fromBlock; n--) {
      const header = headers.get(n);
      if (header === undefined || header.hash !== above.parentHash || !this.#window.prepend(n, header.hash)) break;
      above = header;
    }
    if (this.#firstPassed !== undefined && above.number - 1 < this.#firstPassed) this.#firstPassed = above.number - 1;
  }

  /** The hash of canonical block `number` as the feed follows the chain, when it is recent enough to be remembered. */
  canonicalHash(number: number): string | undefined {
    return this.#window.hash(number);
  }

  async #catchUp(): Promise<void> {
    await this.#onHead(await this.ctx.reader.latestHead());
  }

  async #onHead(head: HeadEvent): Promise<void> {
    if (this.#window.hash(head.number) === head.hash) return; // already passed
    this.#learnGenesis(); // when the start's question went unanswered (the node out of reach)
    const previous = this.#window.highest;
    if (previous !== undefined && head.number < previous.number && !(await this.#isShorterBranch(previous.number))) return;
    const dropped = previous !== undefined && head.number < previous.number ? this.#window.above(head.number) : undefined;
    let linked: { branch: HeadEvent[]; forkedBelowWindow: boolean } | undefined;
    try {
      linked = await this.#linkToWindow(head);
    } catch (err) {
      if (!isHistoryLost(err)) {
        this.#takeLinkedPart();
        throw err;
      }
      if (await this.#isFreshChain()) this.#startAfresh(head);
      else this.#startOver(head, err, "more blocks went by than subscriptions fetch from history: ending the subscribers");
      return;
    }
    if (linked === undefined) {
      // Only the gap's lowest headers were asked: what links goes out, the rest at the next polls.
      this.#takeLinkedPart();
      return;
    }
    const { branch, forkedBelowWindow } = linked;
    // A chain that does not link to the window may be another chain altogether (a dev node restarted afresh that
    // already has blocks, another chain behind the URL): nothing the subscribers hold is on it, whatever its height
    // (found from outside: told as a reorganization "from block N down", N the new chain's height, and not told at
    // all when the subscribers had been sent no more blocks than the window holds).
    if (forkedBelowWindow && (await this.#isFreshChain())) {
      this.#startAfresh(head);
      return;
    }
    const ancestor = (branch[0] as HeadEvent).number - 1;
    const reorged = previous !== undefined && ancestor < previous.number;
    if (reorged) this.ctx.log.info({ network: this.ctx.network.name, ancestor, from: previous.number, to: head.number }, "chain reorganization");
    let tooDeep: GatewayError | undefined;
    if (forkedBelowWindow && this.#sentBelowWindow()) {
      // Blocks the subscribers were sent below the window may be gone too: they start over instead.
      // A branch that starts at block 0 on a chain whose genesis block is the one learnt (the node rolled back to it,
      // or restarted with the same genesis and caught before its first block) kept block 0: it forked at block 1, not
      // below the genesis block (reorgTooDeep(0) says a fresh chain).
      const keptGenesis = ancestor < 0 && this.#genesis !== undefined && this.#genesis !== "" && (branch[0] as HeadEvent).hash.toLowerCase() === this.#genesis;
      tooDeep = reorgTooDeep(keptGenesis ? 1 : ancestor + 1, this.ctx.settings.reorgWindowBlocks);
      this.ctx.log.warn({ network: this.ctx.network.name, ancestor, to: head.number }, "chain reorganization deeper than the window: ending the subscribers");
      this.endAll(tooDeep);
    }
    const replaced: { number: number; hash: string }[] = [];
    for (const header of branch) {
      const old = this.#window.hash(header.number);
      if (old !== undefined && old !== header.hash) replaced.push({ number: header.number, hash: old });
    }
    // The new branch is taken either way, so the feed goes on from it for whoever subscribes next.
    for (const header of branch) {
      this.#accept(header);
      this.emit(header);
    }
    const change: ChainChange = { head, branch, reorg: reorged ? { ancestor } : undefined, dropped, replaced, startedOver: tooDeep };
    for (const listener of this.#chainListeners) listener(change);
  }

  /**
   * More blocks went by than the feed fetches from history, or the node's chain is another (#startAfresh): every
   * subscriber, of heads and of logs alike, is ended with `lost` (they may resume from a block of their choosing),
   * and the feed goes on from `head`, so subscribing again works (found from outside: the window was left behind, so
   * every later head was another such gap, new subscribers were ended at once, and logs subscribers were never told,
   * and sent nothing). `why` is logged.
   */
  #startOver(head: HeadEvent, lost: GatewayError, why: string): void {
    this.ctx.log.warn({ network: this.ctx.network.name, from: this.#current?.number, to: head.number, err: lost.message }, why);
    this.endAll(lost);
    this.#window.clear();
    this.#gapHeaders.clear();
    this.#firstPassed = undefined;
    this.#accept(head);
    const change: ChainChange = { head, branch: [head], startedOver: lost };
    for (const listener of this.#chainListeners) listener(change);
  }

  /** The node's chain is another (a fresh chain): every subscriber is ended, and the feed goes on from `head`. */
  #startAfresh(head: HeadEvent): void {
    this.#startOver(head, reorgTooDeep(0, this.ctx.settings.reorgWindowBlocks), "the node's genesis block changed (a node restarted afresh, or another chain): ending the subscribers");
  }

  /** Asks the node for its genesis block, once it has not answered (see #genesis). */
  #learnGenesis(): void {
    if (this.#genesis !== undefined || this.#learningGenesis) return;
    this.#learningGenesis = true;
    this.ctx.reader
      .genesisHash()
      .then(
        (hash) => {
          this.#genesis ??= hash ?? "";
        },
        (err: unknown) => {
          // Out of reach: asked again at the next head. Any other answer: the node has no genesis block to compare.
          const unreadable = err instanceof GatewayError && err.code === NODEGATE_CODES.upstreamBadResponse;
          if (unreadable || !isOutage(err)) this.#genesis ??= "";
        },
      )
      .finally(() => {
        this.#learningGenesis = false;
      });
  }

  /**
   * Whether the node's genesis block is another than the one learnt before: asked only when a head does not link to
   * the window (one round trip, on that rare path). The new one is remembered, to compare the next such head with.
   * Throws when the node cannot be asked: the head is followed again later, as for any read that failed.
   */
  async #isFreshChain(): Promise<boolean> {
    const before = this.#genesis;
    if (before === undefined || before === "") return false;
    const now = await this.ctx.reader.genesisHash();
    if (now === undefined || now === before) return false;
    this.#genesis = now;
    return true;
  }

  /**
   * Whether a head below the one already passed is the top of a new, shorter
   * branch (a reorganization that removed blocks) rather than a node lagging
   * behind (a poll answered by a load-balanced provider's slower backend, or
   * the first header of a branch that will reach the old height). A lagging
   * node reports a block the window holds (passed over before this is asked);
   * a new branch has another block at that height, or one below the window,
   * and is taken at once only when the node no longer has a block at the old
   * height, else when its head reaches it.
   */
  async #isShorterBranch(passedNumber: number): Promise<boolean> {
    return (await this.ctx.reader.headByNumber(passedNumber)) === undefined;
  }

  /**
   * Whether blocks were sent that the window no longer holds. The starting
   * point is passed unsent; what follows it was sent. Asked when a new branch
   * forked below the window: the walk by parent hash stops at the window's
   * bottom, so how deep the fork is is unknown, and those blocks may be gone
   * (a node that rebuilds a branch block by block, as Anvil's anvil_reorg
   * does, may even report a fork point below the starting point).
   */
  #sentBelowWindow(): boolean {
    const lowest = this.#window.lowest;
    return lowest !== undefined && this.#firstPassed !== undefined && this.#firstPassed + 1 < lowest;
  }

  #accept(head: HeadEvent): void {
    this.#firstPassed ??= head.number;
    this.#window.set(head.number, head.hash);
    this.#current = head;
  }

  /**
   * Takes the part of a gap the node served, from the window's highest block up, as far as its headers link by parent
   * hash: heads and logs flow while a rate-limited node serves the rest over several polls (found from outside, h79:
   * a node serving 2 calls a second gave no head and no log for 31 s, nothing going out until the whole gap linked).
   */
  #takeLinkedPart(): void {
    let parent = this.#window.highest;
    if (parent === undefined || this.#gapHeaders.size === 0) return;
    const branch: HeadEvent[] = [];
    for (let next = this.#gapHeaders.get(parent.number + 1); next !== undefined && next.parentHash === parent.hash; next = this.#gapHeaders.get(parent.number + 1)) {
      branch.push(next);
      parent = next;
    }
    const head = branch.at(-1);
    if (head === undefined) return;
    for (const header of branch) {
      this.#gapHeaders.delete(header.number);
      this.#accept(header);
      this.emit(header);
    }
    const change: ChainChange = { head, branch };
    for (const listener of this.#chainListeners) listener(change);
  }

  /** Throws the node's error when `parent` (the block `child` names as its parent) is not numbered one below it. */
  #checkFollows(child: HeadEvent, parent: HeadEvent | undefined): void {
    if (parent !== undefined && parent.number !== child.number - 1) {
      throw upstreamBadResponse(`block ${child.hash} says it is number ${child.number}, but its parent ${child.parentHash} is number ${parent.number}`);
    }
  }

  /**
   * The headers from the first one the feed has not passed up to `head`,
   * found by walking parent hashes down to a block the window knows (or to
   * the bottom of the window: a reorganization deeper than it is taken from
   * there, and `forkedBelowWindow` says so); undefined when only the gap's
   * lowest headers were asked (#askGap).
   */
  async #linkToWindow(head: HeadEvent): Promise<{ branch: HeadEvent[]; forkedBelowWindow: boolean } | undefined> {
    const linked = await this.#walkToWindow(head);
    if (linked !== undefined) this.#gapHeaders.clear();
    return linked;
  }

  /**
   * Asks the node for the gap's missing headers below `head`, all of them, or after it served only some (a rate limit)
   * the lowest #gapStep: the whole gap asked in parallel at every poll took the node's allowance, and the logs of the
   * blocks that linked waited for the gap to close (found from outside, h81: a log 25 s after its head). Whether every
   * missing header was asked.
   */
  async #askGap(from: number, head: HeadEvent): Promise<boolean> {
    const missing: number[] = [];
    for (let n = from; n < head.number; n++) if (!this.#gapHeaders.has(n)) missing.push(n);
    const asked = missing.slice(0, this.#gapStep);
    if (asked.length === 0) return true;
    const had = this.#gapHeaders.size;
    try {
      await this.ctx.reader.headsByNumber(asked[0] as number, asked.at(-1) as number, this.#gapHeaders);
    } catch (err) {
      // Some served and some refused is a rate limit's mark; none served is an outage, after which the gap is asked whole.
      if (this.#gapHeaders.size > had) this.#gapStep = Number.isFinite(this.#gapStep) ? Math.max(1, Math.floor(this.#gapStep / 2)) : GAP_STEP_AFTER_REFUSAL;
      throw err;
    }
    if (Number.isFinite(this.#gapStep)) this.#gapStep = this.#gapStep * 2 >= GAP_STEP_WHOLE ? Number.POSITIVE_INFINITY : this.#gapStep * 2;
    return asked.length === missing.length;
  }

  async #walkToWindow(head: HeadEvent): Promise<{ branch: HeadEvent[]; forkedBelowWindow: boolean } | undefined> {
    const branch = [head];
    const highest = this.#window.highest;
    const lowest = this.#window.lowest;
    if (highest === undefined || lowest === undefined) return { branch, forkedBelowWindow: false };
    const max = this.ctx.settings.maxBackfillBlocks;
    const missed = head.number - highest.number - 1;
    // A header whose number does not follow its parent's is the node's error, not a gap of that length: taken for one,
    // it ended every subscriber as history lost, or went out to them (found from outside, with a pushed header).
    if (missed > max) this.#checkFollows(head, await this.ctx.reader.headByHash(head.parentHash));
    if (missed > max) {
      this.#gapHeaders.clear();
      throw historyLost(missed, max);
    }
    // A long gap is fetched by number up front (in parallel); the walk by parent hash then proves the links.
    if (missed > 1 && !(await this.#askGap(highest.number + 1, head))) return undefined;
    let child = head;
    for (;;) {
      const parentNumber = child.number - 1;
      if (this.#window.hash(parentNumber) === child.parentHash) return { branch, forkedBelowWindow: false };
      if (parentNumber < lowest) {
        const replaced = this.#window.hash(child.number);
        // A shorter branch whose head is below the window forked below it too.
        return { branch, forkedBelowWindow: child.number < lowest || (replaced !== undefined && replaced !== child.hash) };
      }
      if (branch.length > max) throw historyLost(branch.length, max);
      const fetched = this.#gapHeaders.get(parentNumber);
      const parent = fetched?.hash === child.parentHash ? fetched : await this.ctx.reader.headByHash(child.parentHash);
      if (parent === undefined) throw upstreamBadResponse(`the node does not know block ${child.parentHash}, the parent of block ${child.number}`);
      this.#checkFollows(child, parent);
      this.#gapHeaders.set(parent.number, parent);
      branch.unshift(parent);
      child = parent;
    }
  }
}
