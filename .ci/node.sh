#!/usr/bin/env bash
# Node and npm for the interop tests with the A2A JS SDK (test/interop/test_js_sdk.py), which
# install @a2a-js/sdk with npm on their first run: installed from Debian when missing. The
# tests need Node 20 or newer (@a2a-js/sdk 1.x) and say so when it is older.
set -euo pipefail
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
fi
echo "CI: node $(node --version), npm $(npm --version)" >&2
