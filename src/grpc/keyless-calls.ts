/**
 * Health and reflection take no key, so no key's limits count their calls, and a Watch runs as long as its client
 * stays: anyone could open them by the thousand, each stream held by Node and Connect at about 60 KB, over as many
 * connections as they like (found from outside: 10 connections of headers-only Health/Check streams grew the process
 * from 347 MiB to 1.4 GiB, and other callers' calls waited seconds). They are counted here instead: at most
 * limits.maxKeylessCalls at once in the process, and limits.maxKeylessCallsPerAddress from one client address, so
 * one client address cannot take them all from the probes and load balancers that use them. Past either, a call is refused
 * RESOURCE_EXHAUSTED at its headers, before anything is built for it; each is given back when its response closes.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import type { NodeRequest, NodeResponse } from "../http/http-types.js";
import { whenResponseDone } from "../http/response-closed.js";
import { refuseAtHeaders } from "./arrival-hold.js";

export class KeylessCalls {
  readonly #maxOpen: number;
  readonly #maxPerAddress: number;
  #open = 0;
  readonly #byAddress = new Map<string, number>();

  constructor(maxOpen: number, maxPerAddress: number) {
    this.#maxOpen = maxOpen;
    this.#maxPerAddress = maxPerAddress;
  }

  /** Counts the call until its response closes; false when it has been refused instead. */
  admit(req: NodeRequest, res: NodeResponse): boolean {
    const address = req.socket.remoteAddress ?? "";
    const fromAddress = this.#byAddress.get(address) ?? 0;
    if (this.#open >= this.#maxOpen || fromAddress >= this.#maxPerAddress) {
      const which = this.#open >= this.#maxOpen ? `${this.#maxOpen} are open` : `${this.#maxPerAddress} are open from this client's address`;
      refuseAtHeaders(req, res, new ConnectError(`too many health and reflection calls at once: ${which} (limits.maxKeylessCalls, limits.maxKeylessCallsPerAddress)`, Code.ResourceExhausted));
      return false;
    }
    this.#open++;
    this.#byAddress.set(address, fromAddress + 1);
    whenResponseDone(res, () => {
      this.#open--;
      const left = (this.#byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.#byAddress.set(address, left);
      else this.#byAddress.delete(address);
    });
    return true;
  }
}
