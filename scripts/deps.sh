#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine (CI runs this through `make deps`).
# Each part lives in scripts/deps.d/NAME.sh, owned by the package that needs it; every part
# checks before it installs, so a second run does nothing. Use `apt_install PKG...` from a part.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
APT_UPDATED=""
apt_install() {
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ -z "$APT_UPDATED" ]; then $SUDO apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
export -f apt_install 2>/dev/null || true

go mod download
for part in scripts/deps.d/*.sh; do
  [ -e "$part" ] || continue
  echo "deps: $part"
  # shellcheck disable=SC1090
  source "$part"
done
