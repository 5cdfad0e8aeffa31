#!/usr/bin/env bash
# Make sure the named Debian packages are installed: a no-op when they are, `apt-get install`
# of the missing ones when we are root (or have password-less sudo), one clear error otherwise.
# Usage: scripts/debian-packages.sh PACKAGE...
set -euo pipefail

missing=()
for package in "$@"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [[ $status == "install ok installed" ]] || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0

if ! command -v apt-get >/dev/null; then
    echo "error: these Debian packages are missing and apt-get is not here: ${missing[*]}" >&2
    exit 1
fi
if ((EUID == 0)); then
    as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    echo "error: missing Debian packages: ${missing[*]}; install them as root:" \
        "apt-get install ${missing[*]}" >&2
    exit 1
fi

echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt_options=(-q -o DPkg::Lock::Timeout=300)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "${as_root[@]}" apt-get "${apt_options[@]}" update >"$log" 2>&1 ||
    ! "${as_root[@]}" apt-get "${apt_options[@]}" install -y --no-install-recommends \
        "${missing[@]}" >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "error: apt-get could not install: ${missing[*]} (output above)" >&2
    exit 1
fi
