#!/usr/bin/env bash
# Installs the Debian packages the mail-path tests use: rspamd (spam verdicts), postfix (relay test),
# swaks (SMTP client) and clamav-daemon (virus verdicts). Idempotent: installs only what is missing;
# never starts or configures the system postfix or clamd (the tests run their own instances from
# private config directories; clamd with a signature database the test writes, so no freshclam).
# Usage: bash scripts/install-mail-tools.sh [rspamd] [postfix] [swaks] [clamav-daemon]   (default: all four)
set -euo pipefail
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(rspamd postfix swaks clamav-daemon)
# swaks needs the Perl TLS modules for --tls.
for p in "${want[@]}"; do [ "$p" = swaks ] && want+=(libnet-ssleay-perl libio-socket-ssl-perl); done
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
source "$(dirname "$0")/apt.sh"
export DEBIAN_FRONTEND=noninteractive
# "No configuration": the package installs binaries only and leaves /etc/postfix alone.
echo "postfix postfix/main_mailer_type select No configuration" | $SUDO debconf-set-selections
echo "postfix postfix/mailname string mailroom.localhost" | $SUDO debconf-set-selections
apt_update -qq
apt_get install -y -qq --no-install-recommends "${missing[@]}"
