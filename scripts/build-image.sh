#!/usr/bin/env bash
# mm2's image (docker/Dockerfile) without a Docker engine: built with buildah (chroot
# isolation, as root) on a Debian bookworm base that debootstrap makes from Debian's archive,
# for machines where Docker Hub (and so python:3.11-slim-bookworm) is out of reach.
#
# Usage: scripts/build-image.sh [TAG]        (`make image`; TAG defaults to mm2)
#   MM2_IMAGE_BASE=python:3.11-slim-bookworm scripts/build-image.sh   builds on that base
#   instead, where a registry serves it (no debootstrap then).
#
# The base (minbase + python3, python3-venv, ca-certificates; bookworm, bookworm-updates and
# bookworm-security as its apt sources, upgraded once; the host's own certificate authorities
# from /usr/local/share/ca-certificates added) is made once and kept as a tarball in
# ${MM2_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/mm2}/image-base/bookworm.tar; it is imported
# into buildah's storage as localhost/mm2-base:bookworm when that image is missing. Remove the
# tarball and the image (buildah rmi localhost/mm2-base:bookworm) to make the base anew.
# Installs nothing: it names the Debian packages it needs when they are missing.
set -euo pipefail

tag=${1:-mm2}
cache=${MM2_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mm2}/image-base
base_image=localhost/mm2-base:bookworm
mirror=${MM2_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$(cd "$(dirname "$0")/.." && pwd)

fail() {
    echo "error: build-image: $*" >&2
    exit 1
}

needs=(buildah)
[[ -n ${MM2_IMAGE_BASE:-} ]] || needs+=(debootstrap)
missing=()
for command in "${needs[@]}"; do
    command -v "$command" >/dev/null || missing+=("$command")
done
((${#missing[@]} == 0)) || fail "missing: ${missing[*]}; install Debian's packages as root:" \
    "apt-get install ${missing[*]}"
((EUID == 0)) || fail "run as root (debootstrap and buildah's chroot isolation need it)"

make_base_tarball() {
    local rootfs=$cache/rootfs.part
    rm -rf "$rootfs" "$cache/bookworm.tar.part"
    mkdir -p "$cache"
    echo "making a Debian bookworm base with debootstrap (once; cached in $cache)"
    nice -n 10 debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
        { tail -n 20 "$cache/debootstrap.log" >&2; fail "debootstrap failed (log above)"; }
    # the suites python:3.11-slim-bookworm's apt knows too, so the image gets security updates
    rm -f "$rootfs/etc/apt/sources.list"
    cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    # The host's own certificate authorities too (update-ca-certificates' local ones), so that
    # pip and apt in the build reach PyPI and Debian the way the host does, also through a
    # TLS-inspecting proxy that the host trusts; the image trusts them as well.
    local authorities=(/usr/local/share/ca-certificates/*.crt)
    if [[ -e ${authorities[0]} ]]; then
        echo "adding the host's certificate authorities to the base: ${authorities[*]##*/}"
        cp "${authorities[@]}" "$rootfs/usr/local/share/ca-certificates/"
        chroot "$rootfs" update-ca-certificates >>"$cache/debootstrap.log" 2>&1
    fi
    chroot "$rootfs" apt-get -q update >>"$cache/debootstrap.log" 2>&1 &&
        DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get -q -y upgrade \
            >>"$cache/debootstrap.log" 2>&1 ||
        { tail -n 20 "$cache/debootstrap.log" >&2; fail "apt-get upgrade in the base failed"; }
    chroot "$rootfs" apt-get clean
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin
    tar --numeric-owner -C "$rootfs" -cf "$cache/bookworm.tar.part" .
    mv "$cache/bookworm.tar.part" "$cache/bookworm.tar"
    rm -rf "$rootfs"
}

import_base() {
    echo "importing $cache/bookworm.tar as $base_image"
    local container
    container=$(buildah from scratch)
    # buildah add unpacks a local tar archive at the destination
    buildah add --quiet "$container" "$cache/bookworm.tar" / >/dev/null
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        --env LANG=C.UTF-8 --cmd /bin/bash "$container"
    buildah commit --quiet --rm "$container" "$base_image" >/dev/null
}

if [[ -n ${MM2_IMAGE_BASE:-} ]]; then
    base=$MM2_IMAGE_BASE
else
    base=$base_image
    if ! buildah inspect --type image "$base_image" >/dev/null 2>&1; then
        [[ -f $cache/bookworm.tar ]] || make_base_tarball
        import_base
    fi
fi

echo "building $tag from docker/Dockerfile on $base"
start=$SECONDS
cd "$root"
# --format docker: the OCI format has no HEALTHCHECK, and buildah would drop the image's
nice -n 10 buildah bud --isolation chroot --format docker --layers --build-arg "BASE=$base" \
    -f docker/Dockerfile -t "$tag" .
echo "built $tag in $((SECONDS - start)) s ($SECONDS s in all, the base included):"
buildah images "$tag"
