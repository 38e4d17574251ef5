/**
 * The native path's addresses: POST /v3/<KEY> and WebSocket /ws/v3/<KEY>,
 * optionally under a network prefix: /<network>/v3/<KEY>, /<network>/ws/v3/<KEY>.
 */

export interface NativeRoute {
  transport: "http" | "ws";
  /** Undefined means the default network. */
  network: string | undefined;
  /** Undefined when the path has no key segment. */
  key: string | undefined;
}

const ROUTE = /^(?:\/([A-Za-z0-9_-]+))?(\/ws)?\/v3(?:\/([^/?#]*))?\/?$/;

/** The native route a request path names, or undefined when it is not a native path. */
export function matchNativeRoute(path: string): NativeRoute | undefined {
  const q = path.indexOf("?");
  const m = ROUTE.exec(q < 0 ? path : path.slice(0, q));
  if (m === null) return undefined;
  const [, network, ws, key] = m;
  if (network === "ws" && ws === undefined) {
    // "/ws/v3/<KEY>" reads as network "ws" plus no ws segment; it is the WebSocket path.
    return { transport: "ws", network: undefined, key: key ? safeDecode(key) : undefined };
  }
  return { transport: ws ? "ws" : "http", network, key: key ? safeDecode(key) : undefined };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
