/**
 * Splits a block range into eth_getLogs pages that stay under the node's and
 * nodegate's limits: a page that hits a limit (too many results, too long,
 * too wide a range) is halved and asked again; after a sparse page the size
 * grows back. Pages come in order and cover the range without a gap. Used by
 * StreamLogs and by every log backfill.
 */
import { cancelled } from "../errors/catalogue.js";
import { GatewayError } from "../errors/gateway-error.js";
import type { CallSignal } from "../call-signal.js";

export interface LogPage<L> {
  from: number;
  to: number;
  logs: L[];
}

export interface LogPageOptions {
  /** Blocks in the first page, and the most a page grows back to. */
  pageBlocks: number;
  /** The result limit; a page with under a quarter of it lets the next page double. */
  maxResults: number;
  signal?: CallSignal | undefined;
}

/**
 * Errors a narrower range avoids: the seed's -32005 "more than 10000 results"
 * and "query timeout exceeded", and the ways providers word the same limits;
 * not a rate limit ("rate limit exceeded"), which more, smaller pages only
 * make worse.
 */
const LIMIT_WORDING =
  /more than \d+ results|query timeout|timeout exceeded|timed out|block range|range (is )?too (large|wide|big)|too many (results|logs|blocks)|response size|response (is )?too (big|large)|response exceeds? (the )?size limit|result set too large|exceeds? (the )?(max|limit)|(?<!rate[- ]?|request |requests |credits? |units? |cu |capacity |throughput |rps |second |minute |hour |day )limit exceeded(?!: no connection)|limited to a [\d,]+ (blocks? )?range|ranges? over [\d,]+ blocks|more than [\d,]+ blocks|max(imum)? (block )?range|range limit/i;

export function isLogLimitError(err: unknown): err is GatewayError {
  // A provider's HTTP 429 is its rate limit whatever its wording ("limit exceeded", "RPS limit exceeded"): smaller
  // pages only ask more often (found from outside: pages halved down to one block under Infura's 429 wordings).
  return err instanceof GatewayError && err.httpStatus !== 429 && LIMIT_WORDING.test(err.message);
}

/** Of those, the ones that say the answer itself is too large: a single block's logs refused so will be refused again. */
const RESULT_LIMIT_WORDING = /more than \d+ results|exceeds? max results|too many (results|logs)|response size|response (is )?too (big|large)|response exceeds? (the )?size limit|result set too large/i;

export function isLogResultLimitError(err: unknown): boolean {
  return err instanceof GatewayError && RESULT_LIMIT_WORDING.test(err.message);
}

/** Refusals that depend on how many logs the blocks hold (their size, the time to read them), not on the range alone. */
const DENSITY_WORDING = /timeout|timed out/i;

/** Of the limit errors, those that say the query took too long: one block may pass on a try when the node is less busy. */
export function isLogTimeoutError(err: unknown): boolean {
  return err instanceof GatewayError && DENSITY_WORDING.test(err.message);
}

/** Pages of from..to in order; throws the limit error when a single block alone exceeds it. */
export async function* logPages<L>(
  from: number,
  to: number,
  fetch: (from: number, to: number) => Promise<L[]>,
  options: LogPageOptions,
): AsyncGenerator<LogPage<L>> {
  let widest = Math.max(1, options.pageBlocks);
  let size = widest;
  /** The widest page read since the last refusal. */
  let widestRead = 0;
  let start = from;
  while (start <= to) {
    if (options.signal?.aborted) throw cancelled();
    const end = Math.min(to, start + size - 1);
    let logs: L[];
    try {
      logs = await fetch(start, end);
    } catch (err) {
      if (isLogLimitError(err) && end > start) {
        // A range limit refuses the same width again whatever the blocks hold: pages stay at the widest read below it
        // rather than grow back into it after every sparse page (found from outside: against a limit of 10 blocks,
        // half of the calls were refused, alternating 16 and 8).
        if (widestRead > 0 && widestRead < end - start + 1 && !isLogResultLimitError(err) && !isLogTimeoutError(err)) widest = widestRead;
        size = Math.max(1, Math.floor((end - start + 1) / 2));
        widestRead = 0;
        continue;
      }
      throw err;
    }
    yield { from: start, to: end, logs };
    widestRead = Math.max(widestRead, end - start + 1);
    start = end + 1;
    if (logs.length * 4 < options.maxResults) size = Math.min(widest, size * 2);
  }
}
