#!/usr/bin/env bash
# The native JSON-RPC path with curl: the key is the last path segment, the
# body is plain JSON-RPC 2.0 (one call or a batch), as with any provider.
#   NODEGATE_URL=http://127.0.0.1:8080 NODEGATE_KEY=<key> examples/native/curl.sh
set -euo pipefail
url="${NODEGATE_URL:-http://127.0.0.1:8080}"
key="${NODEGATE_KEY:?set NODEGATE_KEY to an API key (the one in NODEGATE_API_KEYS, or the development key npm start prints when none is set)}"
address="${NODEGATE_ADDRESS:-0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266}"

rpc() {
  # --fail-with-body: exit non-zero on 401/429/5xx but still show nodegate's JSON-RPC error.
  local status=0
  curl -sS --fail-with-body "$url/v3/$key" -H 'content-type: application/json' -d "$1" || status=$?
  echo
  return "$status"
}

echo "# eth_chainId"
rpc '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'
echo "# a batch: eth_blockNumber and eth_getBalance"
rpc '[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]},
      {"jsonrpc":"2.0","id":2,"method":"eth_getBalance","params":["'"$address"'","latest"]}]'
