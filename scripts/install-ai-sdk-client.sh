#!/usr/bin/env bash
# Installs the AI SDK (`ai`, version 6) whose own stream reader the
# AI SDK route's tests read the server's UI message stream with, at a
# pinned version, into target/ai-sdk-client (ignored by git). Idempotent:
# does nothing when the pinned version is already there.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSION=6.0.325
DEST=target/ai-sdk-client

installed_version() {
    local manifest="$DEST/node_modules/$1/package.json"
    [[ -f "$manifest" ]] && node -p "require('./$manifest').version" 2>/dev/null || true
}

if [[ "$(installed_version ai)" == "$VERSION" ]]; then
    echo "==> install-ai-sdk-client: already installed in $DEST"
    exit 0
fi

mkdir -p "$DEST"
[[ -f "$DEST/package.json" ]] || echo '{"name": "agentloop-ai-sdk-test-client", "private": true}' > "$DEST/package.json"
echo "==> install-ai-sdk-client: installing into $DEST"
npm install --prefix "$DEST" --no-audit --no-fund --save-exact "ai@$VERSION"
