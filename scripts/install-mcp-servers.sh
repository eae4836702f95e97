#!/usr/bin/env bash
# Installs the third-party MCP servers the agentloop-mcp tests run against,
# at pinned versions, into target/mcp-servers (ignored by git). Idempotent:
# does nothing when the pinned versions are already there.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31
DEST=target/mcp-servers

installed_version() {
    local manifest="$DEST/node_modules/$1/package.json"
    [[ -f "$manifest" ]] && node -p "require('./$manifest').version" 2>/dev/null || true
}

if [[ "$(installed_version @modelcontextprotocol/server-everything)" == "$EVERYTHING_VERSION" &&
      "$(installed_version @modelcontextprotocol/server-filesystem)" == "$FILESYSTEM_VERSION" ]]; then
    echo "==> install-mcp-servers: already installed in $DEST"
    exit 0
fi

mkdir -p "$DEST"
[[ -f "$DEST/package.json" ]] || echo '{"name": "agentloop-mcp-test-servers", "private": true}' > "$DEST/package.json"
echo "==> install-mcp-servers: installing into $DEST"
npm install --prefix "$DEST" --no-audit --no-fund --save-exact \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
    "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
