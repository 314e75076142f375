#!/usr/bin/env bash
# Debian's chromium for the console's browser tests (playwright-core drives it through
# executablePath; Playwright's own browser downloads cannot be fetched here). Idempotent.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
