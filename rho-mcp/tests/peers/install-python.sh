#!/usr/bin/env bash
# Installs the pinned MCP Python SDK (python-requirements.txt) into a venv,
# for the peer tests that drive rho's MCP server with the official client,
# and the SDK's own example servers beside it (VENV_DIR/examples, from the
# SDK's source distribution of the same version, checked by its hash), for
# the proxy's transparency tests.
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
# The stamp changes with the requirements and with this script (the
# examples' pin is here).
want="$(cat "$requirements" "$0" | sha256sum | cut -d' ' -f1)"
examples_sdist="mcp-2.3.0.tar.gz"
examples_sha256="8b147a50441cf059dc88c684e0aeed3687f0aa0f39c6cde7b90330effd2b34d8"
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
download="$venv/sdist"
mkdir -p "$download"
"$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-input \
    --no-binary :all: --no-deps --dest "$download" mcp==2.3.0
got="$(sha256sum "$download/$examples_sdist" | cut -d' ' -f1)"
if [ "$got" != "$examples_sha256" ]; then
    echo "install-python.sh: $examples_sdist has sha256 $got, not the pinned $examples_sha256" >&2
    exit 1
fi
tar -xzf "$download/$examples_sdist" -C "$download" mcp-2.3.0/examples/servers
mv "$download/mcp-2.3.0/examples/servers" "$venv/examples"
rm -rf "$download"
echo "$want" > "$stamp"
echo "install-python.sh: installed the pinned MCP Python SDK into $venv" >&2
