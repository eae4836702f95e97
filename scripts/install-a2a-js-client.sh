#!/usr/bin/env bash
# Installs the reference A2A JavaScript SDK (@a2a-js/sdk) whose client the
# server's A2A tests drive, at a pinned version, into target/a2a-js-client
# (ignored by git). Idempotent: does nothing when the pinned version is
# already there.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSION=1.3.0
DEST=target/a2a-js-client

installed_version() {
    local manifest="$DEST/node_modules/$1/package.json"
    [[ -f "$manifest" ]] && node -p "require('./$manifest').version" 2>/dev/null || true
}

if [[ "$(installed_version @a2a-js/sdk)" == "$VERSION" ]]; then
    echo "==> install-a2a-js-client: already installed in $DEST"
    exit 0
fi

mkdir -p "$DEST"
[[ -f "$DEST/package.json" ]] || echo '{"name": "agentloop-a2a-js-test-client", "private": true}' > "$DEST/package.json"
echo "==> install-a2a-js-client: installing into $DEST"
npm install --prefix "$DEST" --no-audit --no-fund --save-exact "@a2a-js/sdk@$VERSION"
