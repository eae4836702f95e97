#!/usr/bin/env bash
# Installs the Restate server the agentloop-restate tests run against, at a
# pinned version, from the npm registry (a prebuilt binary per platform),
# into target/restate (ignored by git). Idempotent: does nothing when the
# pinned version is already there. The binary ends up at
# target/restate/node_modules/.bin/restate-server.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

RESTATE_VERSION=1.7.12
DEST=target/restate

installed_version() {
    local manifest="$DEST/node_modules/$1/package.json"
    [[ -f "$manifest" ]] && node -p "require('./$manifest').version" 2>/dev/null || true
}

if [[ "$(installed_version @restatedev/restate-server)" == "$RESTATE_VERSION" &&
      -x "$DEST/node_modules/.bin/restate-server" ]]; then
    echo "==> install-restate: already installed in $DEST"
    exit 0
fi

mkdir -p "$DEST"
[[ -f "$DEST/package.json" ]] || echo '{"name": "agentloop-restate-test-server", "private": true}' > "$DEST/package.json"
echo "==> install-restate: installing restate-server $RESTATE_VERSION into $DEST"
npm install --prefix "$DEST" --no-audit --no-fund --save-exact \
    "@restatedev/restate-server@$RESTATE_VERSION"
