/**
 * Connect writes each message of an answer as one chunk. Over HTTP/2 a
 * multi-MiB chunk is handed to the session whole, and counts against its
 * memory limit until the client has taken it: grpc-go, whose windows are
 * large, had a 12 MB JsonRpcService answer buffered, and once it refused the
 * answer (its 4 MiB receive limit) the session refused every new stream on
 * that connection with ENHANCE_YOUR_CALM for about a minute (found from
 * outside). Cut into pieces, each written once the stream has drained the
 * last (Connect waits for 'drain'), an answer holds no more than a piece or
 * two in the session, and a reset stream stops taking the rest.
 */

/** The largest piece handed to the HTTP/2 stream at once (as the gRPC and native answers are written). */
const PIECE = 64 * 1024;

/** The chunks of `body`, those larger than a piece cut into pieces (views, not copies). */
export async function* inPieces(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    if (chunk.length <= PIECE) {
      yield chunk;
      continue;
    }
    for (let offset = 0; offset < chunk.length; offset += PIECE) yield chunk.subarray(offset, Math.min(offset + PIECE, chunk.length));
  }
}
