#!/usr/bin/env bash
# Debian's chromium for the console's browser tests (playwright-core drives it through
# executablePath; Playwright's own browser downloads cannot be fetched here). Idempotent.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
source "$(dirname "$0")/apt.sh"
export DEBIAN_FRONTEND=noninteractive
apt_update -qq
apt_get install -y -qq --no-install-recommends chromium fonts-dejavu-core
