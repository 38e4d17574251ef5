/**
 * The logs matching one filter, in chain order, each exactly once. Over
 * WebSocket they come from the node's own logs subscription; over HTTP (and
 * to fill any gap) from eth_getLogs by block range, in pages under the seed's
 * limits. The feed remembers the logs it sent for the recent blocks, so it
 * can drop duplicates after a reconnect and take back (removed: true) the
 * logs of blocks a reorganization dropped, whether or not the node says so.
 */
import { blockLogsRefused } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { WsUpstream } from "../upstream/ws-upstream.js";
import type { Consumer } from "./consumer.js";
import { type LogEvent, logKey, readLog } from "./events.js";
import { type Deliver, Feed, type FeedContext, nodeRefused } from "./feed.js";
import type { ChainChange, HeadsFeed } from "./heads-feed.js";
import { isLogLimitError, isLogResultLimitError, isLogTimeoutError, logPages } from "./log-pages.js";
import { type LogTopicFilter, subscribeParams, type Topic } from "./topic.js";
import { SentLogs } from "./sent-logs.js";
import { UpstreamSubscription } from "./upstream-subscription.js";
import type { CallSignal } from "../call-signal.js";

/**
 * Refusals in a row, under a limit other than the result limit, of one block's logs before its subscribers are
 * ended, and the time they must span: the feed's retries come within a second, and a node's moment of load would
 * have ended everyone (found from outside: three tries in 0.2 s).
 */
const ONE_BLOCK_TRIES = 3;
const ONE_BLOCK_REFUSED_MS = 10_000;
/** A result to any call this recently (or two head polls, if longer) says the node serves other calls. */
const SERVED_LATELY_MS = 5000;
/** How long a history waits for the head of a block whose logs were pushed (two head polls, if longer). */
const HEAD_AFTER_LOGS_MS = 5000;
/** The retried work of reading the logs up to the head after a read failed. */
const CATCHING_UP = "catching up on logs";

export class LogsFeed extends Feed {
  readonly #filter: LogTopicFilter;
  readonly #heads: HeadsFeed;
  /** Logs sent to every subscriber for the recent blocks. */
  readonly #sent = new SentLogs((removal) => this.#emitRemoval(removal));
  /** Logs of recent blocks that a resuming client alone was sent, as its history: taken back from it alone. */
  readonly #historySent = new Map<Consumer, SentLogs>();
  /** The blocks a resuming client's history was read over, lowest to highest: its history ledger knows nothing below. */
  readonly #historyRange = new Map<Consumer, { from: number; to: number }>();
  readonly #sentOnly = [this.#sent];
  /**
   * Logs the feed had sent everyone before a resuming client joined, which
   * its history has not sent it (log key -> block number): their removals
   * are not sent to it (found from outside: a client whose history read a
   * reorganization's new branch was sent removals of old-branch logs it
   * never got).
   */
  readonly #notSentTo = new Map<Consumer, Map<string, number>>();
  /** Removals already sent (log key -> block number), so the node's own removal is not sent twice. */
  readonly #removed = new Map<string, number>();
  /** Every log of the blocks up to here has been sent. */
  #scannedTo = 0;
  /**
   * Every log of the blocks up to here has come, read by a scan or followed by a push of a later block. Over
   * WebSocket a head moves #scannedTo on the word that its block's logs came with it; a node whose logs lag its heads
   * has not pushed them yet, and a scan that starts above this would send a later block's logs before them (found
   * from outside, h78: a reorganization's scan sent the new branch's log, then the late pushes of the blocks below it
   * took it back, and the new branch's log never came again).
   */
  #arrivedTo = 0;
  /** Blocks the chain left (replaced or dropped by a reorganization), hash -> number: their late pushes are dropped. */
  readonly #leftBlocks = new Map<string, number>();
  /**
   * The node's connection dropped and the gap is not filled yet: logs must
   * come from the reconnect's scan, not from head advances or pushes (which
   * would overtake the gap's older logs).
   */
  #stale = false;
  /** Connection drops so far: a gap fill that a newer drop overtook does not end staleness. */
  #drops = 0;
  /** The highest block of a log pushed while stale (dropped; the gap fill scans up to at least it). */
  #pushedWhileStaleTo = 0;
  /**
   * The node pushed a log nodegate could not read while the chain's head was
   * here: its block is at most one above, and the logs up to there are
   * fetched by eth_getLogs instead, once a head above this comes (pushes wait,
   * as while a gap is open).
   */
  #unreadPushAt: number | undefined;
  /** Connection drops when the unread push came: a drop since leaves the gap to that reconnect's fill. */
  #unreadPushDrops = 0;
  /** The node refuses the subscription after a reconnect: logs are fetched as the chain moves, as from an HTTP node. */
  #polling = false;
  /** The drop whose gap a fill was asked for while polling (one fill per drop, however many renewals fail). */
  #fillAskedFor = -1;
  /**
   * The one block whose logs the node refused last with another limit (a timeout), and how many times in a row; or
   * (#rateLimited) with a rate limit's words, not counted: either way the next scan asks that block alone first.
   */
  #refusedBlock = -1;
  #refusals = 0;
  /** Whether the last read of the feed failed as the node's refusal of one block (not a node down). */
  #lastFailRefusal = false;
  /** Whether the last read of the feed failed as a rate limit's refusal of one block (not counted toward ending anyone). */
  #rateLimited = false;
  #firstRefusalAt = 0;
  /** Whether a read failed otherwise (a node down) since the last refusal: the refusal window starts again at the next. */
  #failedOtherwiseSinceRefusal = false;
  /** The head when the last refusal came: whether one came between two refusals. */
  #headAtLastRefusal = -1;
  /** When the last refusal came: a result counts toward the node serving other calls only when it came since. */
  #lastRefusalAt = Number.NEGATIVE_INFINITY;
  #subscription: UpstreamSubscription | undefined;
  #stopFollowing: (() => void) | undefined;
  /**
   * The lowest block of a pushed log held back because its block replaced one the heads feed (or a sent log) knows
   * at its height: a new branch the heads feed has not switched to yet, whose start it alone knows. Pushes from here
   * on are left to the scan that follows the switch, which takes back every replaced block's logs first (found from
   * outside: on a node that pushes no removals itself, a removal of a block below came after the new branch's log).
   */
  #heldFrom: number | undefined;
  /** The highest block of a held push: one above the head the switch brings is held on, for the next head's scan. */
  #heldTo = -1;

  constructor(topic: Topic & { kind: "logs" }, ctx: FeedContext, heads: HeadsFeed) {
    super(topic, ctx);
    this.#filter = topic.filter;
    this.#heads = heads;
  }

  get position(): number | undefined {
    return this.#heads.position;
  }

  start(): Promise<void> {
    // Queued, so that logs the node pushes meanwhile wait until the starting point is set and the first scan done.
    return this.queue(async () => {
      const from = this.#heads.position ?? (await this.ctx.reader.blockNumber());
      this.#scannedTo = from;
      this.#arrivedTo = from;
      if (this.ctx.ws !== undefined) {
        await this.#subscribe(this.ctx.ws);
        try {
          // Blocks that arrived while the subscription was being set up have their logs fetched (duplicates are dropped).
          await this.#scan(from + 1, await this.ctx.reader.blockNumber());
        } catch (err) {
          this.ctx.log.warn({ network: this.ctx.network.name, err: (err as Error).message }, "fetching the logs of blocks that arrived while subscribing failed");
        }
      }
      this.#stopFollowing = this.#heads.onChain((change) => void this.run("following the chain", () => this.#onChain(change)));
    });
  }

  async #subscribe(ws: WsUpstream): Promise<void> {
    this.#subscription = new UpstreamSubscription(
      this.ctx.network,
      ws,
      subscribeParams(this.topic),
      {
        notification: (text) =>
          void this.run("a pushed log", async () => {
            let log: LogEvent;
            try {
              log = readLog(text);
            } catch (err) {
              this.#onUnreadPush();
              throw err;
            }
            this.#onPushed(log);
          }),
        disconnected: () => {
          this.#stale = true;
          this.#drops++;
        },
        reconnected: () =>
          this.runUntilDone("resubscribing to logs after a reconnect", async () => {
            const drops = this.#drops;
            // The gap is filled once the heads feed has caught up: a reorganization while disconnected reaches
            // #onChain (queued here meanwhile) and is taken back before the new branch's logs go out.
            const fillGap = () => this.#heads.resync(() => this.runUntilDone("filling the gap after a reconnect", () => this.#fillGap(drops), this.holdingRetryMaxMs));
            try {
              await this.#subscription?.renew();
            } catch (err) {
              // Logs are polled until the node takes the subscription again (feed.ts nodeRefused).
              if (nodeRefused(err)) {
                this.#polling = true;
                if (this.#fillAskedFor !== drops) {
                  this.#fillAskedFor = drops;
                  fillGap();
                }
              }
              throw err;
            }
            if (this.#polling) {
              // Pushes resume now; the blocks since the last poll are not pushed: they are the gap to fill.
              this.#polling = false;
              this.#stale = true;
            }
            fillGap();
          }),
      },
      this.ctx.log,
    );
    await this.#subscription.open();
  }

  async #fillGap(drops: number): Promise<void> {
    const head = await this.ctx.reader.blockNumber();
    await this.#scan(this.#unscannedFrom(), Math.max(head, this.#pushedWhileStaleTo));
    if (this.#drops !== drops) return; // dropped again meanwhile: that reconnect's fill ends it
    if (this.#unreadPushAt !== undefined && this.#scannedTo <= this.#unreadPushAt) {
      // An unread push's block may be above what was scanned: a head above it ends the gap (#onChain).
      this.#unreadPushDrops = drops;
      return;
    }
    this.#endGap();
  }

  /**
   * A pushed log that could not be read (a node's malformed notification) is
   * not lost: pushes wait from now on, and a head above the one known now
   * fetches the logs up to it (found from outside: such a log reached no
   * subscriber, with no error, and nothing fetched it again).
   */
  #onUnreadPush(): void {
    this.#unreadPushAt = Math.max(this.#unreadPushAt ?? 0, this.#heads.position ?? this.#scannedTo);
    this.#unreadPushDrops = this.#drops;
    this.#stale = true;
  }

  /** Fetches the logs up to `head` for an unread push, and ends the gap when nothing else holds it open. */
  async #fillUnreadPush(head: number): Promise<void> {
    const drops = this.#drops;
    try {
      await this.#scan(this.#unscannedFrom(), Math.max(head, this.#pushedWhileStaleTo));
    } catch (err) {
      this.ctx.log.warn({ network: this.ctx.network.name, err: (err as Error).message }, "fetching the logs of an unreadable push failed; the next head retries");
      return;
    }
    if (this.#drops === drops) this.#endGap();
  }

  #endGap(): void {
    this.#stale = false;
    this.#pushedWhileStaleTo = 0;
    this.#unreadPushAt = undefined;
  }

  protected async shutdown(): Promise<void> {
    this.#stopFollowing?.();
    await this.#subscription?.close();
  }

  async history(fromBlock: number, deliver: Deliver, signal: CallSignal, recipient: Consumer, atLeastTo: number | undefined): Promise<number | undefined> {
    // A node pushes a block's logs before its head, so the logs a resuming client let go may be of a block the heads
    // have not reached: its head is waited for a while, and if it does not come the logs are read up to it anyway.
    if (atLeastTo !== undefined) await this.#heads.reached(atLeastTo, signal, Math.max(HEAD_AFTER_LOGS_MS, 2 * this.ctx.settings.pollIntervalMs));
    const position = this.#heads.position;
    if (position === undefined) return undefined;
    const to = Math.max(position, atLeastTo ?? position);
    if (fromBlock > to) return undefined;
    // First, so that the logs read next are judged against the chain as the feed follows it, down to fromBlock.
    await this.#heads.reachDownTo(fromBlock, signal);
    const range = this.#historyRange.get(recipient);
    this.#historyRange.set(recipient, { from: Math.min(range?.from ?? fromBlock, fromBlock), to: Math.max(range?.to ?? to, to) });
    // A passing refusal is tried again; a limit a narrower page avoids goes to logPages, which halves the page.
    const read = (from: number, upTo: number) => this.historyRead(() => this.ctx.reader.logs(this.#filter, from, upTo, false), signal, (err) => err instanceof GatewayError && !isLogLimitError(err));
    const pages = logPages(fromBlock, to, read, {
      pageBlocks: this.ctx.settings.logPageBlocks,
      maxResults: this.ctx.limits.getLogsMaxResults,
      signal,
    });
    for await (const page of pages) for (const log of page.logs) if (this.#sendsAsHistory(log, recipient)) await deliver(log);
    return to;
  }

  /**
   * Whether a log read for a resuming client's history goes to it: not when
   * the feed follows another branch at its height (a reorganization passed
   * while the history was read). One that goes, of a block the feed has
   * passed, is remembered as sent to that client, so a later reorganization
   * takes it back from it too (found from outside: logs sent as history were
   * never taken back when anvil_reorg replaced their blocks). Nor when the
   * feed has sent the log's removal since: a node pushes its removals before
   * the new branch's heads, and a log sent then, read before the
   * reorganization, was never taken back (found from outside). A log of a
   * block the feed has not passed yet is remembered too: its live copy,
   * when it comes, does not go to this client again (found from outside,
   * h76: logs that came after their heads reached a resumed client twice).
   */
  #sendsAsHistory(log: LogEvent, recipient: Consumer): boolean {
    const canonical = this.#heads.canonicalHash(log.blockNumber);
    if (canonical !== undefined && canonical !== log.blockHash) return false;
    if (this.#removed.has(logKey({ ...log, removed: true }))) return false;
    const sentHash = this.#sent.hashAt(log.blockNumber);
    if (sentHash !== undefined && sentHash !== log.blockHash) return false;
    this.#notSentTo.get(recipient)?.delete(logKey(log));
    // One sent to everyone is taken back from everyone, this client included.
    if (!this.#withinWindow(log.blockNumber) || this.#sent.has(log)) return true;
    let sent = this.#historySent.get(recipient);
    if (sent === undefined) {
      sent = new SentLogs((removal) => {
        this.#removed.set(logKey(removal), removal.blockNumber);
        if (!recipient.ended) recipient.push(removal);
      });
      this.#historySent.set(recipient, sent);
    }
    sent.add(log);
    return true;
  }

  override attach(consumer: Consumer, resuming = false): void {
    super.attach(consumer, resuming);
    if (!resuming) return;
    const sent = new Map(this.#sent.keys());
    if (sent.size > 0) this.#notSentTo.set(consumer, sent);
  }

  override detach(consumer: Consumer): void {
    super.detach(consumer);
    this.#historySent.delete(consumer);
    this.#historyRange.delete(consumer);
    this.#notSentTo.delete(consumer);
  }

  /** Sends a removal to the subscribers that were sent the log. */
  #emitRemoval(removal: LogEvent): void {
    this.#removed.set(logKey(removal), removal.blockNumber);
    if (this.#notSentTo.size === 0) {
      this.emit(removal);
      return;
    }
    const added = logKey({ ...removal, removed: false });
    let skip: Set<Consumer> | undefined;
    for (const [consumer, notSent] of this.#notSentTo) if (notSent.delete(added)) (skip ??= new Set()).add(consumer);
    this.emit(removal, skip);
  }

  /** The feed's own record of what it sent, then each resuming client's history. */
  #ledgers(): readonly SentLogs[] {
    return this.#historySent.size === 0 ? this.#sentOnly : [this.#sent, ...this.#historySent.values()];
  }

  async #onChain(change: ChainChange): Promise<void> {
    if (change.startedOver !== undefined) {
      // Logs sent for blocks below the window may be gone, or too many blocks went by to fetch them all: the
      // subscribers start over, and so does the bookkeeping.
      this.endAll(change.startedOver);
      for (const sent of this.#ledgers()) sent.clear();
      this.#notSentTo.clear();
      this.#removed.clear();
      this.#scannedTo = change.head.number;
      this.#arrivedTo = change.head.number;
      this.#leftBlocks.clear();
      this.#heldFrom = undefined;
      this.#heldTo = -1;
      return;
    }
    for (const sent of this.#ledgers()) {
      sent.takeBackReplaced(change.branch);
      sent.takeBackDropped(change.dropped ?? []);
    }
    for (const block of change.replaced ?? []) this.#leftBlocks.set(block.hash, block.number);
    for (const block of change.dropped ?? []) this.#leftBlocks.set(block.hash, block.number);
    // A branch the chain comes back to is followed again.
    if (this.#leftBlocks.size > 0) for (const header of change.branch) this.#leftBlocks.delete(header.hash);
    if (change.reorg !== undefined) this.#scannedTo = Math.min(this.#scannedTo, change.reorg.ancestor);
    // Held pushes are read by the scan below, now that the replaced blocks' logs are taken back.
    const held = this.#heldFrom;
    this.#heldFrom = undefined;
    if (held !== undefined) {
      this.#scannedTo = Math.min(this.#scannedTo, held - 1);
      // Pushes of blocks above this head are not read by this scan: held on, and read at the next head's.
      if (this.#heldTo > change.head.number) this.#heldFrom = change.head.number + 1;
      else this.#heldTo = -1;
    }
    if (this.#stale) {
      // A reconnect's gap is filled by its own fill; an unread push's, once a head above it comes, if no drop since.
      const unreadAt = this.#unreadPushAt;
      if (unreadAt !== undefined && this.#unreadPushDrops === this.#drops && change.head.number > unreadAt) await this.#fillUnreadPush(change.head.number);
      return;
    }
    if (((this.#lastFailRefusal && this.#refusals > 0) || this.#rateLimited) && change.reorg === undefined && this.retryPending(CATCHING_UP)) {
      // A block the node refuses waits for its retry, which reads on to the head then: a new head does not make the
      // node take it, and trying at every head undid the backoff (found from outside: about 3 calls a second; under a
      // rate limit, h81: 30 a second at a 200 ms poll).
    } else if (this.ctx.ws === undefined || this.#polling || change.reorg !== undefined || held !== undefined) {
      // Polling, or a new branch whose logs the node may not push: fetch them.
      try {
        await this.#scan(this.#unscannedFrom(), change.head.number);
      } catch (err) {
        // Not left for the next block to fix: it may be a while coming.
        this.ctx.log.warn({ network: this.ctx.network.name, err: (err as Error).message }, "fetching new logs failed; retrying");
        // A rate limit passes within seconds: its retry waits at most as a gap fill does, not the 30 s an overloaded node gets.
        const maxDelayMs = this.#rateLimited ? this.holdingRetryMaxMs : undefined;
        this.runUntilDone(CATCHING_UP, () => this.#scan(this.#unscannedFrom(), this.#heads.position ?? this.#scannedTo), maxDelayMs);
      }
    } else {
      // The node pushes the head's logs around the head itself; everything before it has arrived.
      this.#scannedTo = Math.max(this.#scannedTo, change.head.number - 1);
    }
    this.#forgetBefore(change.head.number - this.ctx.settings.reorgWindowBlocks);
  }

  #onPushed(log: LogEvent): void {
    if (!this.#stale) {
      // A late push of a block the chain left: its logs, if sent, were taken back when it was left.
      if (!log.removed && this.#leftBlocks.has(log.blockHash)) return;
      if (!log.removed && (this.#heldFrom !== undefined || this.#replacesKnownBlock(log))) {
        this.#heldFrom = Math.min(this.#heldFrom ?? log.blockNumber, log.blockNumber);
        this.#heldTo = Math.max(this.#heldTo, log.blockNumber);
        return;
      }
      // Nodes push a branch's logs in block order: the blocks below this one have had theirs.
      if (!log.removed) this.#arrivedTo = Math.max(this.#arrivedTo, log.blockNumber - 1);
      this.#accept(log);
      return;
    }
    // A gap fill that failed is waiting to retry while the renewed subscription already pushes: the retry sends this.
    this.#pushedWhileStaleTo = Math.max(this.#pushedWhileStaleTo, log.blockNumber);
  }

  /**
   * The logs of a page the feed sends. One block whose logs the node itself refuses as too many (a provider's cap;
   * nodegate's own is not applied to one block) would be refused again at every retry, and the feed would send
   * nothing more, to anyone, without a word (found from outside, with nodegate's cap): its subscribers are ended
   * saying so, and the feed goes on past it for those who subscribe again. A block refused under another limit (a
   * query timeout) may pass on a retry, so it gets ONE_BLOCK_TRIES over ONE_BLOCK_REFUSED_MS before the same end
   * (found from outside: the feed stalled for good on one block's "query timeout exceeded").
   */
  async #readToSend(from: number, to: number): Promise<LogEvent[]> {
    try {
      const logs = await this.ctx.reader.logs(this.#filter, from, to, false);
      this.#lastFailRefusal = false;
      this.#rateLimited = false;
      if (from <= this.#refusedBlock && this.#refusedBlock <= to) this.#refusals = 0;
      return logs;
    } catch (err) {
      this.#lastFailRefusal = from === to && isLogLimitError(err);
      if (!isLogLimitError(err) && this.#refusals > 0) this.#failedOtherwiseSinceRefusal = true;
      if (from !== to || !isLogLimitError(err)) throw err;
      const nodeText = err.message;
      const resultLimit = isLogResultLimitError(err);
      // One block is no range a range limit can refuse: a one-block query refused in neither a result limit's nor a
      // query timeout's words ("limit exceeded") is a rate limit's refusal, which a later try passes. Counted, a node
      // serving 2 calls a second, whose free calls the polls took first, ended every logs subscriber (found from
      // outside, h79): it is retried as an outage is.
      if (!resultLimit && !isLogTimeoutError(err)) {
        this.#lastFailRefusal = false;
        this.#rateLimited = true;
        this.#refusedBlock = from;
        throw err;
      }
      if (!resultLimit) {
        // An outage between refusals is not the node refusing: the tries and the window start again after it. A try
        // when no call has got a result lately and no head came since the try before (a node refusing everything
        // alike: a rate limit in a limit's words) is not the block's refusal either: it neither counts nor ends anyone
        // (found from outside, h73: "limit exceeded" on every call ended every logs subscriber, told to resume past a
        // block the node served 3 s later), nor starts the count again. "Lately" spans two head polls: judged against
        // the try before alone, most tries, quicker than the polls, saw nothing served, and the count never reached
        // ONE_BLOCK_TRIES (h75). A new head then brings the next try, as after an outage.
        // A try counts only when the node served something since the try before as well (h77): the tries made in the
        // first seconds of the node refusing every call saw a result from before that began, counted, and the first
        // refusal once the node served again, past the 10 s, ended everyone, though the next try read the block.
        const now = performance.now();
        const lately = now - Math.max(SERVED_LATELY_MS, 2 * this.ctx.settings.pollIntervalMs);
        const headCame = (this.#heads.position ?? -1) > this.#headAtLastRefusal;
        const served = this.ctx.network.lastResultAt > lately || headCame;
        const servedSince = headCame || (served && this.ctx.network.lastResultAt > this.#lastRefusalAt);
        this.#headAtLastRefusal = this.#heads.position ?? -1;
        this.#lastRefusalAt = now;
        const same = this.#refusedBlock === from && !this.#failedOtherwiseSinceRefusal;
        this.#refusals = !same ? 1 : servedSince ? this.#refusals + 1 : Math.max(this.#refusals, 1);
        if (!served) this.#lastFailRefusal = false;
        this.#failedOtherwiseSinceRefusal = false;
        if (this.#refusals === 1) this.#firstRefusalAt = performance.now();
        this.#refusedBlock = from;
        if (!servedSince || this.#refusals < ONE_BLOCK_TRIES || performance.now() - this.#firstRefusalAt < ONE_BLOCK_REFUSED_MS) throw err;
      }
      this.#refusals = 0;
      this.ctx.log.warn({ network: this.ctx.network.name, block: from, err: nodeText }, "the node refuses one block's logs: ending the logs subscribers");
      this.endAll(blockLogsRefused(from, resultLimit ? undefined : nodeText));
      return [];
    }
  }

  /** Sends the logs of from..to that were not sent yet, page by page. */
  async #scan(from: number, to: number): Promise<void> {
    // A block the node refused last is asked alone, not in pages halved down to it again at every try (found from
    // outside: 8 calls a second to a node saying it was overloaded).
    const refused = this.#refusals > 0 || this.#rateLimited ? this.#refusedBlock : -1;
    if (from <= refused && refused <= to) {
      await this.#scanPages(from, refused - 1);
      await this.#scanPages(refused, refused);
      await this.#scanPages(refused + 1, to);
      return;
    }
    await this.#scanPages(from, to);
  }

  async #scanPages(from: number, to: number): Promise<void> {
    if (from > to) return;
    const pages = logPages(from, to, (a, b) => this.#readToSend(a, b), {
      pageBlocks: this.ctx.settings.logPageBlocks,
      maxResults: this.ctx.limits.getLogsMaxResults,
    });
    for await (const page of pages) {
      for (const log of page.logs) if (this.#onFollowedBranch(log)) this.#accept(log);
      this.#scannedTo = Math.max(this.#scannedTo, page.to);
      this.#arrivedTo = Math.max(this.#arrivedTo, page.to);
    }
  }

  /**
   * Where a scan starts: above what was sent, and, within the window, above only what is known to have come. Blocks
   * between the two whose logs the node pushes late are read again; their late pushes are then repeats, dropped.
   * Below the window a late push is no sign of a reorganization (#withinWindow), and the ledgers that drop repeats
   * have forgotten it, so a scan reaches no lower.
   */
  #unscannedFrom(): number {
    const floor = (this.#heads.position ?? this.#scannedTo) - this.ctx.settings.reorgWindowBlocks;
    return Math.min(this.#scannedTo, Math.max(this.#arrivedTo, floor)) + 1;
  }

  /**
   * Whether a fetched log is of the branch the heads feed follows, where it
   * knows the block: a node may answer eth_getLogs from a branch the heads
   * have not reached yet, and those logs come when they do, after the
   * reorganization's removals (found from outside: a new branch's log went
   * out among the old branch's, then was taken back and sent again).
   */
  #onFollowedBranch(log: LogEvent): boolean {
    const canonical = this.#heads.canonicalHash(log.blockNumber);
    return canonical === undefined || canonical === log.blockHash;
  }

  /** Whether a log's block replaced one known at its height (to the heads feed, or by logs sent from it). */
  #replacesKnownBlock(log: LogEvent): boolean {
    if (!this.#onFollowedBranch(log)) return true;
    for (const sent of this.#ledgers()) {
      const hash = sent.hashAt(log.blockNumber);
      if (hash !== undefined && hash !== log.blockHash) return true;
    }
    return false;
  }

  #accept(log: LogEvent): void {
    if (log.removed) {
      const key = logKey(log);
      if (this.#removed.has(key)) return;
      const added = { ...log, removed: false };
      // A removal of a log no one was sent (its push came late, after its block was left) is not sent either.
      if (this.#withinWindow(log.blockNumber) && !this.#ledgers().some((sent) => sent.has(added))) return;
      for (const sent of this.#ledgers()) sent.forget(added);
      this.#emitRemoval(log);
      return;
    }
    if (this.#sent.has(log)) return; // sent already
    const within = this.#withinWindow(log.blockNumber);
    this.#takeBackOvertaken(this.#sent, log, within);
    // A client's history ledger knows nothing below the block its history was read from: a log there, come late, is
    // no sign that the history's blocks left the chain (found from outside, h76: it took back a whole history).
    for (const [recipient, sent] of this.#historySent) if (log.blockNumber >= (this.#historyRange.get(recipient)?.from ?? 0)) this.#takeBackOvertaken(sent, log, within);
    this.#sent.add(log);
    // A log back on the canonical chain after it was taken back may be taken back again.
    this.#removed.delete(logKey({ ...log, removed: true }));
    if (this.#notSentTo.size > 0) {
      const key = logKey(log);
      for (const notSent of this.#notSentTo.values()) notSent.delete(key);
    }
    // A resumed client whose history sent it already is not sent it again; it is in the feed's ledger from now on, so
    // its removal goes to everyone, this client included. Below the window no ledger remembers it: a history that read
    // its block sent it (found from outside, h78: logs pushed more than the window behind their heads went out twice).
    let skip: Set<Consumer> | undefined;
    for (const [recipient, sent] of this.#historySent) {
      if (!sent.has(log)) continue;
      sent.forget(log);
      (skip ??= new Set()).add(recipient);
    }
    if (!within) {
      for (const [recipient, range] of this.#historyRange) if (range.from <= log.blockNumber && log.blockNumber <= range.to) (skip ??= new Set()).add(recipient);
    }
    this.emit(log, skip);
  }

  /** Takes back from `sent` what a new log of another branch at its height, or below, says left the chain. */
  #takeBackOvertaken(sent: SentLogs, log: LogEvent, within: boolean): void {
    const hash = sent.hashAt(log.blockNumber);
    // Another block at this height replaced the one whose logs were sent, and so every block sent above it: nodes
    // send a branch's logs in block order, so none of those can belong to the new branch yet.
    if (hash !== undefined && hash !== log.blockHash) sent.takeBackFrom(log.blockNumber);
    // The first log of a height below blocks already sent: for the same reason those blocks left the chain (a new,
    // shorter branch whose first blocks had no matching logs; the node pushes its logs before its head).
    else if (hash === undefined && within) sent.takeBackAbove(log.blockNumber);
  }

  /** Whether block `number` is recent enough that logs sent for it are still remembered (a log older is a late repeat). */
  #withinWindow(number: number): boolean {
    return number >= (this.#heads.position ?? number) - this.ctx.settings.reorgWindowBlocks;
  }

  #forgetBefore(number: number): void {
    for (const sent of this.#ledgers()) sent.forgetBefore(number);
    for (const [key, n] of this.#removed) if (n < number) this.#removed.delete(key);
    for (const [hash, n] of this.#leftBlocks) if (n < number) this.#leftBlocks.delete(hash);
    for (const notSent of this.#notSentTo.values()) for (const [key, n] of notSent) if (n < number) notSent.delete(key);
  }
}
