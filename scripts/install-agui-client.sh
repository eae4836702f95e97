#!/usr/bin/env bash
# Installs the reference AG-UI client (@ag-ui/client and @ag-ui/core) the
# agentloop-agui tests verify the encoder's events with, at pinned
# versions, into target/agui-client (ignored by git). Idempotent: does
# nothing when the pinned versions are already there.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

VERSION=1.0.0
DEST=target/agui-client

installed_version() {
    local manifest="$DEST/node_modules/$1/package.json"
    [[ -f "$manifest" ]] && node -p "require('./$manifest').version" 2>/dev/null || true
}

if [[ "$(installed_version @ag-ui/client)" == "$VERSION" &&
      "$(installed_version @ag-ui/core)" == "$VERSION" ]]; then
    echo "==> install-agui-client: already installed in $DEST"
    exit 0
fi

mkdir -p "$DEST"
[[ -f "$DEST/package.json" ]] || echo '{"name": "agentloop-agui-test-client", "private": true}' > "$DEST/package.json"
echo "==> install-agui-client: installing into $DEST"
npm install --prefix "$DEST" --no-audit --no-fund --save-exact \
    "@ag-ui/client@$VERSION" \
    "@ag-ui/core@$VERSION"
