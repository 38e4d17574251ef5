/** The JSON-RPC method names nodegate serves itself, whatever the pass-through list says. */
import { getOption } from "@bufbuild/protobuf";
import { method as methodOption } from "../../gen/nodegate/jsonrpc/v1/options_pb.js";
import { ethMethods } from "./eth-methods.js";
import { starknetMethods } from "./starknet-methods.js";

/** The subscription methods: they need a connection that stays open (WebSocket); typed streams are allowlisted by eth_subscribe. */
export const SUBSCRIPTION_METHODS: ReadonlySet<string> = new Set(["eth_subscribe", "eth_unsubscribe"]);

/** The method table's JSON-RPC names (both chain families) and the subscription methods. */
export function servedMethodNames(): ReadonlySet<string> {
  return new Set([...[...ethMethods, ...starknetMethods].map((entry) => getOption(entry.rpc, methodOption)), ...SUBSCRIPTION_METHODS]);
}
