#!/usr/bin/env bash
# Installs the pinned MCP Python SDK (python-requirements.txt) into a venv,
# for the peer tests that drive rho's MCP server with the official client.
#
#   install-python.sh VENV_DIR
#
# Idempotent: a venv already installed from the same requirements is left
# as it is (a stamp file holds a hash of them). Fails loudly, with the
# reason, when python3, its venv module or the install is not available.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:?usage: install-python.sh VENV_DIR}"
requirements="$here/python-requirements.txt"

if ! command -v python3 >/dev/null 2>&1; then
    echo "install-python.sh: python3 is not on PATH; the MCP peer tests need Python 3.10 or later" >&2
    exit 1
fi
if ! python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
    echo "install-python.sh: $(python3 --version 2>&1) is too old; the MCP Python SDK needs 3.10 or later" >&2
    exit 1
fi

stamp="$venv/.rho-requirements"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
mkdir -p "$(dirname "$venv")"

# One installer at a time: several test binaries may ask at once.
exec 9>"$venv.lock"
flock 9

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    exit 0
fi

rm -rf "$venv"
if ! python3 -m venv "$venv"; then
    echo "install-python.sh: python3 -m venv failed (on Debian: apt-get install python3-venv)" >&2
    exit 1
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --requirement "$requirements"
"$venv/bin/python" -c 'import mcp.client.session, mcp.client.stdio, mcp.client.streamable_http'
echo "$want" > "$stamp"
echo "install-python.sh: installed the pinned MCP Python SDK into $venv" >&2
