/**
 * Cancellation of a call, as nodegate's own code uses it: whether it was
 * cancelled, and listeners told once when it is. An AbortSignal is one (the
 * typed doors pass Connect's), and so is a CallCancellation, which the native
 * door and in-flight coalescing create per request: on Node 20 an
 * AbortController with its EventTarget costs several microseconds per
 * request (setMaxListeners alone about 5 us), a noticeable share of a small
 * call's whole budget. Signals never leave nodegate's code (the upstream
 * clients take a cancel call, not a signal), so the plain class is enough.
 */
export interface CallSignal {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** A CallSignal and the means to cancel it. Listeners run once, in the order added; any number may listen. */
export class CallCancellation implements CallSignal {
  #aborted = false;
  #listeners: Set<() => void> | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get signal(): CallSignal {
    return this;
  }

  abort(): void {
    if (this.#aborted) return;
    this.#aborted = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener();
  }

  addEventListener(_type: "abort", listener: () => void): void {
    // As with an AbortSignal, a listener added after the abort is never called.
    if (this.#aborted) return;
    (this.#listeners ??= new Set()).add(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    this.#listeners?.delete(listener);
  }
}

/** A signal that is never cancelled. */
export const NEVER_CANCELLED: CallSignal = {
  aborted: false,
  addEventListener() {},
  removeEventListener() {},
};
