#!/usr/bin/env bash
# The Dockerfile's steps without a Docker engine: build dist/, re-resolve its lock, install production
# dependencies into a scratch app dir exactly as the runtime stage does, then start every service from
# it (as an unprivileged user when run as root) against DATABASE_URL / REDIS_URL and run the image's
# HEALTHCHECK. Prints node_modules sizes (the checkout's full install vs the runtime stage's).
# Needs the npm registry, except with --quick: the build's own packages plus the checkout's
# node_modules linked in instead of `npm ci` (what e2e/verify-image.test.ts runs: minutes less).
# Every port is ephemeral (API, SMTP and each service's HEALTH_PORT_<SERVICE>), so it runs beside
# anything; on exit, however it ends, it stops what it started and deletes its scratch dir, the
# scratch database it created and its Redis keys.
# Usage: scripts/verify-image.sh [--quick]   (DATABASE_URL=… REDIS_URL=… to use your own; a scratch
#        database on the local server by default)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
quick=""
[ "${1:-}" = "--quick" ] && quick=1
repo="$PWD"
work="$(mktemp -d /tmp/mailroom-image.XXXXXX)"
chmod 755 "$work"
pid=""
own_db=""
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export REDIS_PREFIX="${REDIS_PREFIX:-mailroom-image-check-$$-$RANDOM}"
if [ -z "${DATABASE_URL:-}" ]; then
  own_db="mailroom_image_check_$$_$RANDOM"
  export DATABASE_URL="postgresql://postgres@127.0.0.1:5432/$own_db"
fi
echo "verify-image: scratch dir $work, database ${own_db:-(yours)}, Redis prefix $REDIS_PREFIX"

# Runs from the checkout (its node_modules): drops the scratch database and the Redis keys.
forget() {
  (cd "$repo" && node --input-type=module -e '
    import pg from "pg";
    import { Redis } from "ioredis";
    const [db, prefix] = process.argv.slice(1);
    if (db) {
      const url = new URL(process.env.DATABASE_URL); url.pathname = "/postgres";
      const c = new pg.Client({ connectionString: url.toString() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
      await c.end();
    }
    const r = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 });
    let cursor = "0";
    do {
      const [next, keys] = await r.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 500);
      cursor = next;
      if (keys.length) await r.del(...keys);
    } while (cursor !== "0");
    r.disconnect();
  ' "$own_db" "$REDIS_PREFIX") || echo "verify-image: cleanup of the database or Redis keys failed" >&2
}
cleanup() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    # start-all leads its own process group (setsid): nothing it started outlives the check.
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  forget
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

out="$work/dist"
node scripts/build.mjs --out "$out" >/dev/null
app="$work/app"
if [ -n "$quick" ]; then
  # The build's own workspace links (node_modules/@mailroom) plus every third-party package of the checkout.
  mv "$out" "$app"
  for dep in node_modules/* node_modules/.bin; do
    name="$(basename "$dep")"
    [ "$name" = "@mailroom" ] || [ -e "$app/node_modules/$name" ] || ln -s "$repo/$dep" "$app/node_modules/$name"
  done
else
  rm -rf "$out/node_modules"
  (cd "$out" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  # Runtime stage: manifests, `npm ci --omit=dev`, Prisma's other-database compilers removed, then code.
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
fi

# Start everything from the app dir as nobody (the image runs as `node`): nothing may need to write
# to the app directory or read the checkout. Not root: as this user, with the same check by mode bits.
mkdir -p "$work/bin" && cp "$(command -v node)" "$work/bin/node" && chmod 755 "$work/bin/node"
chmod -R a+rX "$app"
chmod -R a-w "$app"
as_app_user() { if [ "$(id -u)" = 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi; }
# Ephemeral ports, chosen by the kernel: API, SMTP and one health port per service.
read -r API_PORT SMTP_PORT HEALTH_PORT_API HEALTH_PORT_SMTP_INGEST HEALTH_PORT_RULE_ENGINE \
  HEALTH_PORT_WEBHOOK_DISPATCHER HEALTH_PORT_OUTBOUND_SENDER HEALTH_PORT_DOMAIN_VERIFIER < <(node -e '
    const net = require("node:net");
    const servers = Array.from({ length: 8 }, () => net.createServer().listen(0, "127.0.0.1"));
    Promise.all(servers.map((s) => new Promise((r) => s.once("listening", r)))).then(() => {
      console.log(servers.map((s) => s.address().port).join(" "));
      for (const s of servers) s.close();
    });')
export API_PORT SMTP_PORT HEALTH_PORT_API HEALTH_PORT_SMTP_INGEST HEALTH_PORT_RULE_ENGINE \
  HEALTH_PORT_WEBHOOK_DISPATCHER HEALTH_PORT_OUTBOUND_SENDER HEALTH_PORT_DOMAIN_VERIFIER
export API_HOST=127.0.0.1 SMTP_HOST=127.0.0.1 HEALTH_HOST=127.0.0.1
export SMTP_RELAY_URL="${SMTP_RELAY_URL:-smtp://127.0.0.1:2}" NODE_ENV=production
# NODE_ENV=production refuses the development CURSOR_SECRET: a random one for this check.
export CURSOR_SECRET="${CURSOR_SECRET:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}"
(cd "$app" && "$work/bin/node" packages/db/src/migrate-cli.js >/dev/null)
(cd "$app" && exec setsid bash -c 'if [ "$(id -u)" = 0 ]; then exec setpriv --reuid=65534 --regid=65534 --clear-groups "$0" scripts/start-all.js; else exec "$0" scripts/start-all.js; fi' "$work/bin/node" >"$work/run.log" 2>&1) &
pid=$!
for _ in $(seq 1 480); do
  [ "$(grep -c 'listening on\|consuming queue\|checking pending' "$work/run.log" || true)" -ge 6 ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/run.log" >&2; exit 1; }
  sleep 0.5
done
(cd "$app" && as_app_user "$work/bin/node" scripts/healthcheck.js) || { tail -50 "$work/run.log" >&2; exit 1; }
from="the runtime stage"
[ -n "$quick" ] && from="the build (--quick)"
echo "verify-image: all services started from $from; HEALTHCHECK passed"
