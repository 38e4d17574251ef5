/**
 * When a response is done with, whole or cut short. Node 20 emits no `close`
 * on an HTTP/1.1 response still queued behind earlier ones of a pipelining
 * client when that client's connection goes: what such a response held (its
 * answer, in the reply budget) was never given back (found from outside: a
 * key that pipelined 30 large calls and hung up held its share for good). So
 * the connection's own `close` counts too.
 */
import type { Socket } from "node:net";
import type { NodeResponse } from "./http-types.js";

/** What to do when each HTTP/1.1 connection closes: one listener per connection, however many responses wait on it. */
const onConnectionClose = new WeakMap<Socket, Set<() => void>>();

/** Each HTTP/1.1 response's connection, remembered while the request still has it (Connect may destroy the request, nulling it). */
const connectionOf = new WeakMap<NodeResponse, Socket>();

/** Remembers an HTTP/1.1 response's connection on its arrival, before Connect can destroy its request (nulling req.socket). */
export function rememberConnection(res: NodeResponse): void {
  if (!("stream" in res) && res.req.socket !== null) connectionOf.set(res, res.req.socket);
}

/** Calls `fn` once, when `res` closes or its connection does; at once when either already has. */
export function whenResponseDone(res: NodeResponse, fn: () => void): void {
  if ("stream" in res) {
    // HTTP/2: each stream closes on its own, whatever its session does.
    if (res.stream.closed || res.stream.destroyed) fn();
    else res.once("close", fn);
    return;
  }
  if (res.closed || res.destroyed) {
    fn();
    return;
  }
  // The response being written (it has its connection) closes with it; only one queued behind others needs more.
  if (res.socket !== null) {
    res.once("close", fn);
    return;
  }
  // A request Connect destroyed (a stream's envelope over readMaxBytes) has no socket any more (found from outside:
  // reading it threw, the call's error became "internal error", and it was never logged, its stream gauge left up);
  // one queued behind others still waits for its connection, as remembered on arrival (found from outside: taken
  // for closed, a pipelined refusal was logged Canceled before its answer was written).
  const socket = res.req.socket ?? connectionOf.get(res) ?? null;
  if (socket === null || socket.destroyed) {
    fn();
    return;
  }
  let waiting = onConnectionClose.get(socket);
  if (waiting === undefined) {
    const all = new Set<() => void>();
    waiting = all;
    onConnectionClose.set(socket, all);
    socket.once("close", () => {
      for (const done of [...all]) done();
    });
  }
  const pending = waiting;
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    pending.delete(once);
    res.removeListener("close", once);
    fn();
  };
  pending.add(once);
  res.once("close", once);
}
