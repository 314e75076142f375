#!/usr/bin/env bash
# The README's run command: install, migrate, and run every service against DATABASE_URL / REDIS_URL
# (default: the local PostgreSQL and Redis).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
bash scripts/install-deps.sh
exec npm start
