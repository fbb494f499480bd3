#!/usr/bin/env bash
# Installs the pinned model-API Python SDKs (python-requirements.txt:
# openai, anthropic, google-genai) into a venv, for the peer tests that let
# the official SDKs judge the JSON rho-model writes (judge.py) and build the
# responses it reads (made.py).
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
    echo "install-python.sh: python3 is not on PATH; the model peer tests need Python 3.10 or later" >&2
    exit 1
fi
if ! python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
    echo "install-python.sh: $(python3 --version 2>&1) is too old; the model-API SDKs need 3.10 or later" >&2
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
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --requirement "$requirements"; then
    echo "install-python.sh: pip could not install $requirements into $venv (is PyPI reachable?)" >&2
    exit 1
fi
"$venv/bin/python" -c '
import openai.types.chat, openai.types.responses
import anthropic.types, anthropic.types.beta
import google.genai.types
'
echo "$want" > "$stamp"
echo "install-python.sh: installed the pinned model-API Python SDKs into $venv" >&2
