#!/usr/bin/env bash
# Installs rspamd from Debian when missing and starts it on 127.0.0.1:11333 when nothing answers
# there. Idempotent; CI calls it before the tests (then RSPAMD_URL=http://127.0.0.1:11333 works).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
url="${RSPAMD_URL:-http://127.0.0.1:11333}"
ping() { curl -fsS --max-time 2 "$url/ping" >/dev/null 2>&1; }
command -v rspamd >/dev/null 2>&1 || bash "$here/install-mail-tools.sh" rspamd
ping && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO install -d -o _rspamd -g _rspamd /run/rspamd /var/lib/rspamd /var/log/rspamd
# Daemonizes; workers drop to the _rspamd user.
$SUDO rspamd -u _rspamd -g _rspamd
for _ in $(seq 1 100); do
  ping && exit 0
  sleep 0.2
done
echo "rspamd did not answer at $url/ping; see /var/log/rspamd/rspamd.log" >&2
exit 1
