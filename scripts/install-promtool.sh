#!/usr/bin/env bash
# promtool, which checks and unit-tests infra/prometheus/alerts.yml (e2e/prometheus-rules.test.ts),
# from Debian's `prometheus` package (it ships promtool beside the server; the server is neither
# started nor configured here). Idempotent: installs only when promtool is missing.
set -euo pipefail
command -v promtool >/dev/null 2>&1 && exit 0
source "$(dirname "$0")/apt.sh"
export DEBIAN_FRONTEND=noninteractive
apt_update -qq
apt_get install -y -qq --no-install-recommends prometheus >/dev/null
command -v promtool >/dev/null
