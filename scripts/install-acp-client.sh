#!/usr/bin/env bash
# Installs the reference Agent Client Protocol client
# (@agentclientprotocol/sdk) the `agentloop acp` tests drive the agent
# with, at a pinned version, into target/acp-client (ignored by git).
# Idempotent: does nothing when the pinned version is already there.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSION=2.4.0
DEST=target/acp-client

installed_version() {
    local manifest="$DEST/node_modules/$1/package.json"
    [[ -f "$manifest" ]] && node -p "require('./$manifest').version" 2>/dev/null || true
}

if [[ "$(installed_version @agentclientprotocol/sdk)" == "$VERSION" ]]; then
    echo "==> install-acp-client: already installed in $DEST"
    exit 0
fi

mkdir -p "$DEST"
[[ -f "$DEST/package.json" ]] || echo '{"name": "agentloop-acp-test-client", "private": true}' > "$DEST/package.json"
echo "==> install-acp-client: installing into $DEST"
npm install --prefix "$DEST" --no-audit --no-fund --save-exact \
    "@agentclientprotocol/sdk@$VERSION"
