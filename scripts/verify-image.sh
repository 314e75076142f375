#!/usr/bin/env bash
# The Dockerfile's steps without a Docker engine: build dist/, re-resolve its lock, install production
# dependencies into a scratch app dir exactly as the runtime stage does, then start every service from
# it as an unprivileged user against DATABASE_URL / REDIS_URL and run the image's HEALTHCHECK. Prints
# node_modules sizes (the checkout's full install vs the runtime stage's). Needs the npm registry.
# Usage: DATABASE_URL=… REDIS_URL=… scripts/verify-image.sh   (uses a scratch database by default)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
work="$(mktemp -d /tmp/mailroom-image.XXXXXX)"
chmod 755 "$work"
pid=""
cleanup() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

out="$work/dist"
node scripts/build.mjs --out "$out" >/dev/null
rm -rf "$out/node_modules"
(cd "$out" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)

# Runtime stage: manifests, `npm ci --omit=dev`, Prisma's other-database compilers removed, then code.
app="$work/app"
mkdir -p "$app"
(cd "$out" && find . -name package.json -not -path "*/node_modules/*" | while read -r f; do
  mkdir -p "$app/$(dirname "$f")" && cp "$f" "$app/$f"
done && cp package-lock.json "$app/")
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
find "$app/node_modules/@prisma/client/runtime" \( -name "*.map" -o -name "*mysql*" -o -name "*sqlite*" \
  -o -name "*sqlserver*" -o -name "*cockroachdb*" \) -delete
(cd "$out" && tar -cf - .) | (cd "$app" && tar -xf -)
for bad in tsx typescript prisma jest testcontainers @swc/core; do
  [ ! -e "$app/node_modules/$bad" ] || { echo "verify-image: $bad is in the runtime node_modules" >&2; exit 1; }
done
echo "node_modules: checkout (full install) $(du -sm node_modules | cut -f1) MB; runtime stage $(du -sm "$app/node_modules" | cut -f1) MB; compiled code $(du -sm --exclude=node_modules "$app" | cut -f1) MB"

# Start everything from the runtime dir as nobody (the image runs as `node`): nothing may need to
# write to the app directory or read the checkout.
mkdir -p "$work/bin" && cp "$(command -v node)" "$work/bin/node" && chmod 755 "$work/bin/node"
chmod -R a+rX "$app"
export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/mailroom_image_check}"
export REDIS_PREFIX="${REDIS_PREFIX:-mailroom-image-check}" API_PORT="${API_PORT:-38300}" SMTP_PORT="${SMTP_PORT:-38325}"
export SMTP_RELAY_URL="${SMTP_RELAY_URL:-smtp://127.0.0.1:2}" NODE_ENV=production
# NODE_ENV=production refuses the development CURSOR_SECRET: a random one for this check.
export CURSOR_SECRET="${CURSOR_SECRET:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
(cd "$app" && "$work/bin/node" packages/db/src/migrate-cli.js >/dev/null)
(cd "$app" && exec setpriv --reuid=65534 --regid=65534 --clear-groups "$work/bin/node" scripts/start-all.js >"$work/run.log" 2>&1) &
pid=$!
for _ in $(seq 1 240); do
  [ "$(grep -c 'listening on\|consuming queue\|checking pending' "$work/run.log" || true)" -ge 6 ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/run.log" >&2; exit 1; }
  sleep 0.5
done
(cd "$app" && as_nobody "$work/bin/node" scripts/healthcheck.js)
echo "verify-image: all services started from the runtime stage; HEALTHCHECK passed"
