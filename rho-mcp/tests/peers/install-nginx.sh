#!/usr/bin/env bash
# Installs nginx (Debian's package): the load balancer the scale-out test
# (tests/scale_out.rs) puts in front of three rho-mcp servers.
#
#   install-nginx.sh
#
# Does nothing when nginx is there (/usr/sbin/nginx). Fails loudly, with
# the reason, when it cannot install (not root and no sudo, no apt-get).
# Only the binary is used: the test runs it as the user it runs as, with a
# configuration and prefix of its own; Debian's service is not started.
set -euo pipefail

if [ -x /usr/sbin/nginx ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-nginx.sh: no apt-get here; install nginx (/usr/sbin/nginx) by hand for the scale-out test" >&2
    exit 1
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
        echo "install-nginx.sh: not root and no sudo; install nginx by hand for the scale-out test" >&2
        exit 1
    fi
    as_root=(sudo)
fi
# Only the binary is needed; RUNLEVEL=1 asks Debian's scripts not to start
# the service (where there is one to start).
install_nginx() {
    "${as_root[@]}" env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends nginx-light >/dev/null 2>&1 \
    || "${as_root[@]}" env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends nginx >/dev/null
}
install_nginx || { "${as_root[@]}" apt-get update >/dev/null && install_nginx; }
if [ ! -x /usr/sbin/nginx ]; then
    echo "install-nginx.sh: apt-get finished but /usr/sbin/nginx is missing" >&2
    exit 1
fi
echo "install-nginx.sh: installed $(/usr/sbin/nginx -v 2>&1)" >&2
