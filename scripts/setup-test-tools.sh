#!/usr/bin/env bash
# Debian tools the mail-path tests run against for real: rspamd (spam verdicts, started on
# 127.0.0.1:11333), postfix (relay test, run from a private config dir), swaks (SMTP client) and
# clamav-daemon (virus verdicts: each test starts its own clamd, @mailroom/testing startClamd);
# helm (the chart test renders infra/helm/mailroom); promtool (the alert rules' tests); chromium
# (the console's browser tests).
# Idempotent: installs only what is missing and starts rspamd only when nothing answers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/install-mail-tools.sh"
bash "$here/rspamd.sh"
bash "$here/install-helm.sh"
bash "$here/install-promtool.sh"
bash "$here/install-chromium.sh"
