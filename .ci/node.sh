#!/usr/bin/env bash
# Node and npm for the interop tests with the A2A JS SDK (test/interop/test_js_sdk.py), which
# install @a2a-js/sdk with npm on their first run. @a2a-js/sdk 1.x needs Node 20 or newer:
# npm comes from Debian when missing, and a Node older than 20 (Debian 12 has 18) is replaced
# by the npm registry's own build of Node 20 (the "node" package), put first on PATH.
set -euo pipefail
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    npm install --global --silent node@20 >&2
    hash -r
fi
echo "CI: node $(node --version), npm $(npm --version)" >&2
