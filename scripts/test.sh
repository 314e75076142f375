#!/usr/bin/env bash
# The README's test command: install, then typecheck, lint and the whole jest suite against the
# local PostgreSQL and Redis (TEST_DATABASE_URL / TEST_REDIS_URL override them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
bash scripts/install-deps.sh
if [ -f scripts/setup-test-tools.sh ]; then bash scripts/setup-test-tools.sh; fi
# The console bundle the browser tests load (scripts/run.sh builds it through npm run build).
npm run -s console:build
npm run -s typecheck
npm run -s lint
# Every workspace declares what it imports (scripts/undeclared-imports.mjs).
node scripts/undeclared-imports.mjs
# No import cycles in services/ and packages/ (scripts/import-cycles.mjs).
node scripts/import-cycles.mjs
# No function over 60 lines in services/ and packages/ outside the shrinking allowlist
# (scripts/long-functions.mjs, scripts/long-functions.allowlist).
node scripts/long-functions.mjs
npm test
