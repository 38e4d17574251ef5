#!/usr/bin/env bash
# One command: generate the stubs, then run the client with Debian's Python
# (python3-grpcio and python3-protobuf are installed for /usr/bin/python3,
# not for a pyenv or venv python that may come first on PATH).
#   NODEGATE_URL=http://127.0.0.1:8080 NODEGATE_KEY=<key> examples/python/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/generate.sh"
exec /usr/bin/python3 "$here/client.py" "$@"
