# syntax=docker/dockerfile:1
# One image for every mailroom service; the command picks the service:
#   docker run IMAGE                                   every service (after the migrations)
#   docker run IMAGE node services/api/src/main.js     one service (likewise smtp-ingest, rule-engine,
#                                                      webhook-dispatcher, outbound-sender, domain-verifier)
#   docker run IMAGE node packages/db/src/migrate-cli.js   the migrations (a Helm hook / compose job)
#   docker run IMAGE node packages/db/src/wait-schema-cli.js   waits until they ran (an init container)
#   docker run IMAGE node tools/admin/src/cli.js --help    the admin CLI
# The base image, pinned to one Node release and one Debian release (the same Node the scripts
# fetch: scripts/ensure-node.sh), so a rebuild of the same commit gets the same runtime. For a
# byte-identical base, pin its digest too, from the registry you build against:
#   docker buildx imagetools inspect node:24.21.0-bookworm-slim --format '{{json .Manifest.Digest}}'
#   → --build-arg NODE_IMAGE=node:24.21.0-bookworm-slim@sha256:<digest>
# Bump both together: a new Node here and MAILROOM_NODE_VERSION in ensure-node.sh (a test checks).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# Build: all dependencies (TypeScript, Prisma's generator), then `scripts/build.mjs` → dist/:
# compiled JavaScript, each workspace's package.json pointing at it, the SQL migrations.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
ENV CHECKPOINT_DISABLE=1
COPY . .
# postinstall generates the Prisma client (offline), which the build compiles with the rest.
RUN npm ci --no-audit --no-fund --loglevel=error && node scripts/build.mjs && rm -rf dist/node_modules
# dist/package.json lists only the workspaces that run: re-resolve the lock for it (same versions),
# so the install below cannot pull in the test harness's or the Prisma CLI's dependencies.
RUN cd dist && npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error
# The manifests alone, so the production install below is cached until dependencies change.
RUN mkdir /manifests && cd dist && find . -name package.json -not -path "*/node_modules/*" -print0 \
    | xargs -0 -I{} sh -c 'mkdir -p "/manifests/$(dirname "{}")" && cp "{}" "/manifests/{}"' \
    && cp package-lock.json /manifests/

# Runtime: production dependencies and compiled JavaScript only — no TypeScript, tsx, Prisma CLI,
# jest or testcontainers. Runs as the unprivileged `node` user (uid 1000).
FROM ${NODE_IMAGE} AS runtime
WORKDIR /app
ENV NODE_ENV=production CHECKPOINT_DISABLE=1
COPY --from=build /manifests/ ./
# Prisma's client ships a query compiler per database; only PostgreSQL's is used.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error && npm cache clean --force \
    && find node_modules/@prisma/client/runtime \( -name "*.map" -o -name "*mysql*" -o -name "*sqlite*" \
       -o -name "*sqlserver*" -o -name "*cockroachdb*" \) -delete
COPY --from=build /src/dist/ ./
USER node
# Health of what the container runs (one service's HEALTH_PORT, or all six under start-all).
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["node", "scripts/healthcheck.js"]
EXPOSE 3000 2525 9464-9469
CMD ["sh", "-c", "node packages/db/src/migrate-cli.js && exec node scripts/start-all.js"]
