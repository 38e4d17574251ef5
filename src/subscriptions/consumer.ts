/**
 * The receiving end of a subscription, whichever door it serves: it takes
 * live events without blocking the feed (and ends itself when its client
 * falls too far behind), lets history deliveries wait for room, and can be
 * ended by the feed.
 */
import type { GatewayError } from "../errors/gateway-error.js";
import type { FeedEvent } from "./events.js";

export interface Consumer {
  /** Takes one live event. A consumer that has no room ends itself (subscriber too slow). */
  push(event: FeedEvent): void;
  /** Resolves when the consumer has room for more; rejects once it has ended. History deliveries wait on it. */
  ready(): Promise<void>;
  /** Ends the consumer with a reason (the feed failed, the server is closing). */
  end(error: GatewayError): void;
  /**
   * Ends the consumer as too slow when its client has taken nothing for a
   * while with `alsoWaiting` more events held for it elsewhere (a resume's
   * live events, held while its history is sent), as if they waited in it.
   */
  judgePace?(alsoWaiting: number): void;
  readonly ended: boolean;
}

/** The position of an event in the chain (pending transactions have none). */
export function blockOf(event: FeedEvent): number | undefined {
  if (event.kind === "head") return event.number;
  if (event.kind === "log") return event.blockNumber;
  return undefined;
}
