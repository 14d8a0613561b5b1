#!/usr/bin/env bash
# Builds a local stand-in for the Dockerfile's base image (python:3.11-slim) where no container
# registry can be reached: Debian bookworm (whose python3 is 3.11) from the distribution's own
# packages by debootstrap, imported with `docker import`. Does nothing if the image already exists.
#
#   docker/build-base-image.sh [IMAGE]        # default python:3.11-slim; FORCE=1 rebuilds it
#
# Needs root (or sudo) for debootstrap, the debootstrap package and a reachable Debian mirror
# (MIRROR, default http://deb.debian.org/debian). About 2 minutes on a 2-core machine.
set -euo pipefail

IMAGE=${1:-python:3.11-slim}
SUITE=bookworm
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# python3-venv: the Dockerfile makes a virtualenv (Debian's own python refuses `pip install`
# outside one); netbase and ca-certificates as in the official slim images.
PACKAGES=python3,python3-venv,netbase,ca-certificates

if [ -z "${FORCE:-}" ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "base image $IMAGE already exists; reusing it (FORCE=1 $0 rebuilds it)"
    exit 0
fi

SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
if ! command -v debootstrap >/dev/null; then
    echo "debootstrap is missing; install it with: ${SUDO:+sudo }apt-get install debootstrap" >&2
    exit 1
fi

rootfs=$(mktemp -d "${TMPDIR:-/var/tmp}/kraft-base.XXXXXX")
trap '$SUDO rm -rf "$rootfs"' EXIT

echo "== debootstrap $SUITE (minbase + $PACKAGES) from $MIRROR into $rootfs"
$SUDO debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" \
    > "$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; echo "debootstrap failed; full log: $rootfs.log" >&2; exit 1; }
rm -f "$rootfs.log"

# What the official images do too: apt sources for later `apt-get install`s, no package caches,
# no docs, and `python` beside `python3`.
$SUDO tee "$rootfs/etc/apt/sources.list" >/dev/null <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
EOF
$SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
$SUDO ln -sf /usr/bin/python3 "$rootfs/usr/local/bin/python"

echo "== docker import as $IMAGE"
$SUDO tar -C "$rootfs" --numeric-owner -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    --change "LABEL org.opencontainers.image.description=\"local stand-in for $IMAGE: Debian $SUITE from its packages, built by kraft's docker/build-base-image.sh\"" \
    - "$IMAGE" >/dev/null
docker run --rm "$IMAGE" python3 -c 'import sys, venv; print("base image ready: python", sys.version.split()[0])'
