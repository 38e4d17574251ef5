/**
 * The one error type that crosses layers. It holds the JSON-RPC error exactly
 * as a legacy caller will see it, plus how the typed path and the native HTTP
 * path express it (gRPC code, HTTP status). Upstream errors and nodegate's own
 * errors both become a GatewayError; the front doors only render it.
 */
import { Code } from "@connectrpc/connect";
import { withoutSecrets, withoutSecretsInJson, withoutSecretsInJsonMembers } from "./secret-texts.js";

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  /** Raw JSON text of error.data, when there is one. */
  data?: string;
}

export interface GatewayErrorInit extends JsonRpcErrorObject {
  grpcCode: Code;
  /** HTTP status on the native path; 200 for errors the node itself answers with. */
  httpStatus?: number;
  /** Seconds a caller should wait before retrying (rate limits), sent as Retry-After and RetryInfo. */
  retryAfterSeconds?: number;
  /** Who produced it: the upstream node, or nodegate. */
  origin?: "upstream" | "nodegate";
  /** Whether it says the node is down (circuit breakers count it); by default nodegate's UNAVAILABLE and DEADLINE_EXCEEDED do. */
  outage?: boolean;
  /**
   * A node's error members besides code, message and data (Erigon's and some
   * providers' "reason", "stack", ...), as raw JSON text: `,"k":v` each. The
   * native door sends them on as the node wrote them.
   */
  otherMembers?: string;
  /** Kept for logs only, never sent. */
  cause?: unknown;
  /**
   * For errors that end a native WebSocket connection: the close frame's reason, which the WebSocket protocol caps at
   * 123 bytes (RFC 6455 5.5: a control frame's payload is at most 125 bytes, 2 of them the code), so the message is
   * said shorter there, what to do kept. The message, whole, is logged.
   */
  closeReason?: string;
}

export class GatewayError extends Error {
  override name = "GatewayError";
  readonly code: number;
  readonly data: string | undefined;
  readonly grpcCode: Code;
  readonly httpStatus: number;
  readonly retryAfterSeconds: number | undefined;
  readonly origin: "upstream" | "nodegate";
  readonly outage: boolean;
  readonly otherMembers: string | undefined;
  readonly closeReason: string | undefined;

  constructor(init: GatewayErrorInit) {
    // An answer, not a bug: no stack is captured (found from outside: 120,000 calls timing out at once spent 1.6 s of
    // a frozen event loop capturing stacks nobody reads). What went wrong is in the message and the cause.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      // A node's text may quote the upstream URL's key (secret-texts.ts).
      super(withoutSecrets(init.message), init.cause === undefined ? undefined : { cause: init.cause });
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.code = init.code;
    this.data = init.data === undefined ? undefined : withoutSecretsInJson(init.data);
    this.grpcCode = init.grpcCode;
    this.httpStatus = init.httpStatus ?? 200;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.origin = init.origin ?? "nodegate";
    this.outage = init.outage ?? (this.origin === "nodegate" && (init.grpcCode === Code.Unavailable || init.grpcCode === Code.DeadlineExceeded));
    this.otherMembers = init.otherMembers === undefined ? undefined : withoutSecretsInJsonMembers(init.otherMembers);
    this.closeReason = init.closeReason === undefined ? undefined : withoutSecrets(init.closeReason);
  }

  /** The JSON-RPC error object as JSON text. */
  toJson(): string {
    const head = `{"code":${this.code},"message":${JSON.stringify(this.message)}`;
    const tail = this.otherMembers === undefined ? "}" : `${this.otherMembers}}`;
    return this.data === undefined ? `${head}${tail}` : `${head},"data":${this.data}${tail}`;
  }
}
