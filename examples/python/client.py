"""Calling nodegate's typed EthService from Python with grpcio.

The stubs come from proto/ through protoc and grpc_python_plugin
(examples/python/generate.sh); nodegate reads the API key from the
x-api-key header and puts JSON-RPC errors in the status details.

Against `npm start` (it prints the address and a development key):
    NODEGATE_URL=http://127.0.0.1:8080 NODEGATE_KEY=<key> examples/python/run.sh
NODEGATE_ADDRESS picks the account whose balance is shown (default: Anvil's first account).
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))

import grpc  # noqa: E402
from google.rpc import status_pb2  # noqa: E402
from nodegate.eth.v1 import eth_service_pb2, eth_service_pb2_grpc, primitives_pb2  # noqa: E402
from nodegate.jsonrpc.v1 import error_pb2  # noqa: E402

URL = os.environ.get("NODEGATE_URL", "http://127.0.0.1:8080")
KEY = os.environ.get("NODEGATE_KEY")
ACCOUNT = os.environ.get("NODEGATE_ADDRESS", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266")


def uint256(value):
    """nodegate's Uint256 is big-endian bytes without leading zeros."""
    return int.from_bytes(value.value, "big")


def describe_error(err):
    """The JSON-RPC error nodegate put in grpc-status-details-bin, when there is one."""
    for name, value in err.trailing_metadata() or ():
        if name == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                if detail.Is(error_pb2.JsonRpcError.DESCRIPTOR):
                    json_rpc = error_pb2.JsonRpcError()
                    detail.Unpack(json_rpc)
                    return f"{err.code().name}: JSON-RPC error {json_rpc.code} {json_rpc.message}"
    return f"{err.code().name}: {err.details()}"


def main():
    if not KEY:
        sys.exit("set NODEGATE_KEY to an API key (the one in NODEGATE_API_KEYS, or the development key npm start prints when none is set)")
    target = URL.split("://", 1)[-1].split("/", 1)[0]
    if URL.startswith("https://"):
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials())
    else:
        channel = grpc.insecure_channel(target)
    metadata = [("x-api-key", KEY)]
    with channel:
        eth = eth_service_pb2_grpc.EthServiceStub(channel)
        try:
            chain = eth.ChainId(eth_service_pb2.ChainIdRequest(), metadata=metadata, timeout=10)
            print(f"chain id: {chain.chain_id}")
            latest = primitives_pb2.BlockId(tag=primitives_pb2.BLOCK_TAG_LATEST)
            block = eth.GetBlockByNumber(eth_service_pb2.GetBlockByNumberRequest(block=latest), metadata=metadata, timeout=10).block
            print(f"latest block: {block.number} (hash 0x{block.hash.hex()}, {len(block.transactions.hashes)} transactions)")
            request = eth_service_pb2.GetBalanceRequest(address=bytes.fromhex(ACCOUNT[2:]))
            balance = eth.GetBalance(request, metadata=metadata, timeout=10).balance
            print(f"balance of {ACCOUNT}: {uint256(balance)} wei")
        except grpc.RpcError as err:
            sys.exit(f"nodegate call failed: {describe_error(err)}")


if __name__ == "__main__":
    main()
