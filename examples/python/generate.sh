#!/usr/bin/env bash
# Generates Python messages and gRPC stubs from proto/ into examples/python/gen
# with the distribution's compilers: protoc (protobuf-compiler) and
# grpc_python_plugin (protobuf-compiler-grpc). The runtime is Debian's
# python3-protobuf and python3-grpcio, which match those compilers' output.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
for tool in protoc grpc_python_plugin; do
  command -v "$tool" >/dev/null || { echo "$tool not found: apt-get install -y protobuf-compiler protobuf-compiler-grpc libprotobuf-dev" >&2; exit 2; }
done
# nodegate's protos import descriptor.proto (their options); Debian ships it in libprotobuf-dev, not with protoc.
[ -f /usr/include/google/protobuf/descriptor.proto ] || { echo "google/protobuf/descriptor.proto not found: apt-get install -y libprotobuf-dev" >&2; exit 2; }
rm -rf "$here/gen"
mkdir -p "$here/gen"
cd "$root/proto"
# nodegate's protos, and google.rpc.Status for the error details nodegate sends.
mapfile -t protos < <(find nodegate -name '*.proto' | sort; echo google/rpc/status.proto)
protoc -I . \
  --python_out="$here/gen" \
  --grpc_python_out="$here/gen" \
  --plugin=protoc-gen-grpc_python="$(command -v grpc_python_plugin)" \
  "${protos[@]}"
