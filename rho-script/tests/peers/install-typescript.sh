#!/usr/bin/env bash
# Installs the pinned TypeScript compiler (typescript/package.json, exact
# version in typescript/package-lock.json) with npm, for the test that
# type-checks the declarations code mode renders.
#
#   install-typescript.sh DIR
#
# Idempotent: a DIR installed from the same lockfile is left as it is (a
# stamp file holds its hash). Fails loudly, with the reason, when node,
# npm or the install is not available.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)/typescript"
dir="${1:?usage: install-typescript.sh DIR}"

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "install-typescript.sh: $tool is not on PATH; the declarations test needs Node.js with npm" >&2
        exit 1
    fi
done

stamp="$dir/.rho-lock"
want="$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
mkdir -p "$(dirname "$dir")"

# One installer at a time: several test binaries may ask at once.
exec 9>"$dir.lock"
flock 9

tsc="$dir/node_modules/typescript/bin/tsc"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$tsc" ]; then
    exit 0
fi

rm -rf "$dir"
mkdir -p "$dir"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
# Exactly the lockfile's version; no install scripts run.
(cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
if [ ! -f "$tsc" ]; then
    echo "install-typescript.sh: npm ci finished but $tsc is missing" >&2
    exit 1
fi
echo "$want" > "$stamp"
echo "install-typescript.sh: installed the pinned TypeScript compiler into $dir" >&2
