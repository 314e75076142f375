#!/usr/bin/env bash
# `npm ci` when node_modules is missing or was installed from another package-lock.json.
# (npm ci also generates the Prisma client, offline, through the root postinstall script.)
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.mailroom-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -d packages/db/src/generated ]; then
  echo "install-deps: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
