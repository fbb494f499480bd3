#!/usr/bin/env bash
# Installs bubblewrap (Debian's package), the peer rho-bench's confinement
# figure measures rho's launcher against.
#
#   install-bwrap.sh
#
# Does nothing when /usr/bin/bwrap is there. Fails loudly, with the reason,
# when it cannot install (not root and no sudo, no apt-get).
set -euo pipefail

if [ -x /usr/bin/bwrap ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-bwrap.sh: no apt-get here; install bubblewrap (/usr/bin/bwrap) by hand for the confinement figure" >&2
    exit 1
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-bwrap.sh: not root and no sudo; install bubblewrap by hand for the confinement figure" >&2
        exit 1
    fi
    as_root=(sudo)
fi
"${as_root[@]}" apt-get install -y --no-install-recommends bubblewrap >/dev/null \
    || { "${as_root[@]}" apt-get update >/dev/null && "${as_root[@]}" apt-get install -y --no-install-recommends bubblewrap >/dev/null; }
if [ ! -x /usr/bin/bwrap ]; then
    echo "install-bwrap.sh: apt-get finished but /usr/bin/bwrap is missing" >&2
    exit 1
fi
echo "install-bwrap.sh: installed bubblewrap $(/usr/bin/bwrap --version)" >&2
