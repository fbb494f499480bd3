#!/usr/bin/env bash
# Installs the pinned MCP reference server and the official TypeScript SDK
# (node/package.json, exact versions in node/package-lock.json) with npm,
# for the tests that import the server as a rho source and the tests whose
# client (node/client.mjs) drives rho's server.
#
#   install-node.sh DIR
#
# Idempotent: a DIR installed from the same lockfile is left as it is (a
# stamp file holds its hash). Fails loudly, with the reason, when node,
# npm or the install is not available.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: install-node.sh DIR}"
lock="$here/node/package-lock.json"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "install-node.sh: $tool is not on PATH; the MCP import tests need Node.js 20 or later with npm" >&2
        exit 1
    fi
done
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
    echo "install-node.sh: node $(node --version) is too old; the MCP reference server needs 20 or later" >&2
    exit 1
fi

stamp="$dir/.rho-lock"
want="$( (cat "$here/node/package.json" "$lock") | sha256sum | cut -d' ' -f1)"
mkdir -p "$(dirname "$dir")"

# One installer at a time: several test binaries may ask at once.
exec 9>"$dir.lock"
flock 9

server="$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$server" ]; then
    exit 0
fi

rm -rf "$dir"
mkdir -p "$dir"
cp "$here/node/package.json" "$lock" "$dir/"
# Exactly the lockfile's versions; no install scripts run.
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
for need in "$server" "$dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"; do
    if [ ! -f "$need" ]; then
        echo "install-node.sh: npm ci finished but $need is missing" >&2
        exit 1
    fi
done
echo "$want" > "$stamp"
echo "install-node.sh: installed the pinned MCP reference servers and TypeScript SDK into $dir" >&2
