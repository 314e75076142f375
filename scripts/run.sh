#!/usr/bin/env bash
# The README's run command: install, build (dist/: the compiled JavaScript the Docker image runs too),
# migrate, and run every service from dist/ against DATABASE_URL / REDIS_URL (default: the local
# PostgreSQL and Redis). `npm start` runs the same services from the TypeScript sources instead.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
bash scripts/install-deps.sh
npm run -s build
cd dist
node packages/db/src/migrate-cli.js
exec node scripts/start-all.js
