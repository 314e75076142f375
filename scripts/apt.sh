# Debian package installs for the setup scripts; sourced, not run. apt-get gives up at once when
# another process holds one of its locks (unattended-upgrades, a second setup run on the same
# machine, another engineer's install): these wait for the lock instead, up to APT_LOCK_TIMEOUT
# seconds (default 600), and change nothing about what gets installed.
apt_lock_timeout="${APT_LOCK_TIMEOUT:-600}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

# apt-get that waits for the dpkg locks (install, remove). Untranslated messages: apt_update reads them.
apt_get() {
  $SUDO env LC_ALL=C apt-get -o DPkg::Lock::Timeout="$apt_lock_timeout" "$@"
}

# apt-get update. Its lock on the package lists has no timeout option (apt 2.6 applies
# DPkg::Lock::Timeout to the dpkg lock only), so it is tried again while that lock is what failed.
apt_update() {
  local err deadline=$((SECONDS + apt_lock_timeout)) said=""
  err="$(mktemp)"
  until apt_get update "$@" 2>"$err"; do
    if ! grep -q "Could not get lock" "$err" || [ "$SECONDS" -ge "$deadline" ]; then
      cat "$err" >&2
      rm -f "$err"
      return 1
    fi
    [ -n "$said" ] || echo "apt: waiting for the package lists lock another process holds" >&2
    said=1
    sleep 1
  done
  cat "$err" >&2
  rm -f "$err"
}
