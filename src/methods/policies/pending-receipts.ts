/**
 * The seed's state rule for eth_getBlockReceipts: called with "pending" it
 * returns the same data as "latest". Nodes differ here (Anvil answers null,
 * geth the receipts of the block it is building), so nodegate asks for latest.
 */
import { create } from "@bufbuild/protobuf";
import type { GetBlockReceiptsRequest } from "../../../gen/nodegate/eth/v1/eth_service_pb.js";
import { BlockIdSchema, BlockTag } from "../../../gen/nodegate/eth/v1/primitives_pb.js";
import type { MethodPolicy } from "../policy.js";

export const pendingReceiptsAreLatest: MethodPolicy = {
  before(request) {
    const r = request as GetBlockReceiptsRequest;
    if (r.block?.kind.case !== "tag" || r.block.kind.value !== BlockTag.PENDING) return false;
    r.block = create(BlockIdSchema, { kind: { case: "tag", value: BlockTag.LATEST } });
    return true;
  },
};
