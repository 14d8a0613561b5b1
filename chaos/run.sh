#!/usr/bin/env bash
# A chaos run: see `chaos/run.sh --help`. Only finds the project's interpreter; chaos/run.py does
# the rest (it needs root for network namespaces).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${VIRTUAL_ENV:-}" && -x "$VIRTUAL_ENV/bin/python" ]]; then
    python="$VIRTUAL_ENV/bin/python"
elif [[ -x "$root/.venv/bin/python" ]]; then
    python="$root/.venv/bin/python"        # the virtualenv .ci/run makes
else
    python="$(command -v python3)"
fi
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -m chaos.run "$@"
