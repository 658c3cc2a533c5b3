#!/usr/bin/env bash
# Installs what Trawl needs, then crawls the built-in simulated web on the local stack.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
exec .venv/bin/trawl demo "$@"
