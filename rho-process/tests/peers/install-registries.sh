#!/usr/bin/env bash
# Installs the local package registries tests/registries.rs runs real
# package managers against (pip and npm, inside a confinement), each pinned,
# and the one real package each serves, into DIR:
#
#   python/           a venv of Debian's python3 with pypiserver
#                     (registry-python.txt, exact versions)
#   python-packages/  the wheel six 1.17.0, from the Python package index
#   node/             verdaccio (registry-node/package.json, exact versions
#                     in its lockfile), installed with `npm ci`
#   npm-storage/      verdaccio's storage holding is-number 7.0.0 (`npm pack`
#                     from the npm registry), published once into a
#                     verdaccio started here, so that the layout is the one
#                     verdaccio itself writes; the tests copy it and serve it
#                     offline
#
#   install-registries.sh DIR
#
# Idempotent: a DIR installed from the same pins is left as it is (a stamp
# file holds a hash of them and of this script). Fails loudly, with the
# reason, when something is missing; installs python3-pip and python3-venv
# (Debian's packages) with apt-get when Debian's python3 lacks them, as the
# tests run its pip inside the box. Everything is left readable by every
# user: the tests run again as `nobody` from it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: install-registries.sh DIR}"
requirements="$here/registry-python.txt"
node_pins="$here/registry-node"

# Debian's python3: the one inside the box (the tests run its pip there),
# and the venv's base. (Not a python3 under /root, such as pyenv's: the
# unprivileged rerun could not run it.)
python=/usr/bin/python3
# The real packages served, pinned by version and by hash.
wheel=six-1.17.0-py2.py3-none-any.whl
wheel_sha256=4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274
tarball=is-number-7.0.0.tgz
tarball_sha1=7535345b896734d5f80c4d06c50955527a14f12b

say() { echo "install-registries.sh: $*" >&2; }
fail() {
    say "$*"
    exit 1
}

# Debian's packages, as root or through sudo.
apt_install() {
    command -v apt-get >/dev/null 2>&1 \
        || fail "no apt-get here; install $* by hand (Debian's python3 with pip and venv)"
    local as_root=()
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || fail "not root and no sudo; install $* by hand"
        as_root=(sudo)
    fi
    say "installing $* (Debian's packages)"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null \
        || { "${as_root[@]}" apt-get update >/dev/null \
            && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null; } \
        || fail "apt-get could not install $*"
}

[ -x "$python" ] || apt_install python3
[ -x "$python" ] || fail "$python is missing: install python3 (Debian's package)"
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || fail "$("$python" --version 2>&1) is too old; pypiserver 2.4.2 needs 3.10 or later"
"$python" -m pip --version >/dev/null 2>&1 || apt_install python3-pip
"$python" -m pip --version >/dev/null 2>&1 \
    || fail "$python -m pip does not run: install python3-pip (Debian's package)"
"$python" -c 'import ensurepip, venv' >/dev/null 2>&1 || apt_install python3-venv
"$python" -c 'import ensurepip, venv' >/dev/null 2>&1 \
    || fail "$python has no venv: install python3-venv (Debian's package)"
for tool in /usr/bin/node /usr/bin/npm; do
    [ -x "$tool" ] || fail "$tool is missing: install Node.js 20 or later with npm"
done
/usr/bin/node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    || fail "node $(/usr/bin/node --version) is too old; verdaccio 6.8.0 needs 20 or later"

mkdir -p "$(dirname "$dir")"
# Absolute: verdaccio's configuration names paths in it.
dir="$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"
stamp="$dir/.rho-registries"
want="$(cat "$requirements" "$node_pins/package.json" "$node_pins/package-lock.json" "$0" \
    | sha256sum | cut -d' ' -f1)"

# One installer at a time: several test binaries may ask at once.
exec 9>"$dir.lock"
flock 9

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

rm -rf "$dir"
mkdir -p "$dir"
# Readable by every user, whatever the caller's umask.
umask 022

# pypiserver, exactly the pinned versions.
"$python" -m venv "$dir/python" || fail "$python -m venv failed (install python3-venv)"
"$dir/python/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --requirement "$requirements" \
    || fail "pip could not install $requirements (is the Python package index reachable?)"
"$dir/python/bin/python" -c '
import importlib.metadata as m, sys
sys.exit(0 if m.version("pypiserver") == "2.4.2" else "pypiserver is not 2.4.2")
'

# The wheel pypiserver serves.
"$dir/python/bin/python" -m pip download --quiet --disable-pip-version-check --no-input \
    --no-deps --only-binary=:all: --dest "$dir/python-packages" six==1.17.0 \
    || fail "pip could not download six==1.17.0 (is the Python package index reachable?)"
[ "$(sha256sum "$dir/python-packages/$wheel" | cut -d' ' -f1)" = "$wheel_sha256" ] \
    || fail "$dir/python-packages/$wheel is missing or not the pinned file"

# verdaccio, exactly the lockfile's versions; no install scripts run.
mkdir -p "$dir/node"
cp "$node_pins/package.json" "$node_pins/package-lock.json" "$dir/node/"
(cd "$dir/node" && /usr/bin/npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) \
    || fail "npm ci could not install verdaccio (is the npm registry reachable?)"
verdaccio="$dir/node/node_modules/verdaccio/bin/verdaccio"
[ -f "$verdaccio" ] || fail "npm ci finished but $verdaccio is missing"

# The package verdaccio serves: the registry's own tarball.
seed="$dir/seed"
mkdir -p "$seed"
(cd "$seed" && /usr/bin/npm pack --loglevel=error is-number@7.0.0 >/dev/null) \
    || fail "npm pack could not fetch is-number@7.0.0 (is the npm registry reachable?)"
[ "$(sha1sum "$seed/$tarball" | cut -d' ' -f1)" = "$tarball_sha1" ] \
    || fail "$seed/$tarball is missing or not the pinned file"

# Published into a verdaccio of its own (no uplinks: it asks no one else),
# on a free port of the loopback, then stopped.
port="$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
registry="http://127.0.0.1:$port/"
cat >"$seed/config.yaml" <<EOF
storage: $dir/npm-storage
auth:
  htpasswd:
    file: $seed/htpasswd
    max_users: 1
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$authenticated
web:
  enable: false
log: { type: stdout, format: pretty, level: warn }
EOF
/usr/bin/node "$verdaccio" --config "$seed/config.yaml" --listen "127.0.0.1:$port" \
    >"$seed/verdaccio.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
node_get() {
    /usr/bin/node -e '
fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1));
' "$1"
}
for _ in $(seq 600); do
    node_get "$registry-/ping" && break
    kill -0 "$server" 2>/dev/null || fail "verdaccio ended before it answered: $(cat "$seed/verdaccio.log")"
    sleep 0.1
done
node_get "$registry-/ping" || fail "verdaccio did not answer in a minute: $(cat "$seed/verdaccio.log")"
token="$(/usr/bin/node -e '
fetch(process.argv[1] + "-/user/org.couchdb.user:seed", {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "seed", password: "seed-" + Math.random() }),
}).then((r) => r.json()).then((body) => {
    if (!body.token) throw new Error(JSON.stringify(body));
    console.log(body.token);
}).catch((error) => { console.error(error.message); process.exit(1); });
' "$registry")" || fail "verdaccio did not make the publishing user: $(cat "$seed/verdaccio.log")"
printf '//127.0.0.1:%s/:_authToken=%s\n' "$port" "$token" >"$seed/npmrc"
/usr/bin/npm publish "$seed/$tarball" --registry "$registry" --userconfig "$seed/npmrc" \
    --cache "$seed/cache" --ignore-scripts --loglevel=error >/dev/null \
    || fail "npm publish into verdaccio failed: $(cat "$seed/verdaccio.log")"
kill "$server"
wait "$server" 2>/dev/null || true
trap - EXIT
for need in "$dir/npm-storage/is-number/package.json" "$dir/npm-storage/is-number/$tarball"; do
    [ -f "$need" ] || fail "npm publish finished but $need is missing"
done
rm -rf "$seed/cache" "$seed/npmrc"

chmod -R a+rX "$dir"
echo "$want" >"$stamp"
say "installed pypiserver 2.4.2 serving six 1.17.0, and verdaccio 6.8.0 serving is-number 7.0.0, into $dir"
