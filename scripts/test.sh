#!/usr/bin/env bash
# Installs what the tests need, then runs lint, types and the whole test suite
# (two workers, each test module on one of them with its own broker and database).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/bootstrap.sh
# bootstrap.sh installed Prometheus and the WARC tools: their tests must run, not skip
export OPERATOR_TOOLS_REQUIRED=1
.venv/bin/ruff check libs services cli tests bench
.venv/bin/mypy
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=20 "$@"
