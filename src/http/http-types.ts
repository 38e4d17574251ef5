/** The request and response types Connect's Node adapter hands to handlers (HTTP/1.1 or HTTP/2). */
import type { connectNodeAdapter } from "@connectrpc/connect-node";

type NodeHandler = ReturnType<typeof connectNodeAdapter>;
export type NodeRequest = Parameters<NodeHandler>[0];
export type NodeResponse = Parameters<NodeHandler>[1];
