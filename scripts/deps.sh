#!/usr/bin/env bash
# Install the Debian packages the build needs, when some are missing.  As root this runs
# apt-get; otherwise it names what is missing and how to install it, and fails.
set -euo pipefail
missing=()
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
