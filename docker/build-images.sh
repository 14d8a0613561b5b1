#!/usr/bin/env bash
# The README's image build step: the kraft image (default tag kraft:local) that
# docker-compose.yml runs, built with no network inside the build.
#
#   docker/build-images.sh [TAG]
#
# 1. The base image (the Dockerfile's python:3.11-slim): kept if present, else pulled, else (no
#    registry reachable) built from Debian's packages by docker/build-base-image.sh.
# 2. kraft's dependencies as wheels for CPython 3.11 on Linux, fetched on this host into
#    build/docker-wheels (in the build context), so the image build installs them offline.
# 3. docker build.
# 4. Where only Compose v1 is installed (Debian bookworm), the `docker compose` plugin that runs it
#    (docker/install-compose-plugin.sh), so `docker compose up quorum` works as written.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG=${1:-${KRAFT_IMAGE:-kraft:local}}
BASE=python:3.11-slim
PYTHON=${PYTHON:-python3}

if docker image inspect "$BASE" >/dev/null 2>&1; then
    echo "== base image $BASE: present"
elif docker pull "$BASE" >/dev/null 2>&1; then
    echo "== base image $BASE: pulled"
else
    echo "== base image $BASE: cannot be pulled; building it from Debian's packages"
    docker/build-base-image.sh "$BASE"
fi

wheels=build/docker-wheels
requirements_txt=$(mktemp)
rm -rf "$wheels"
mkdir -p build
trap 'rm -rf "$wheels" "$requirements_txt"' EXIT
# kraft's dependencies and build backend, read from pyproject.toml, for the image's CPython 3.11
# on this host's architecture, whatever Python runs here; binary wheels only (no compiler there).
requirements=$("$PYTHON" -c 'import tomllib
doc = tomllib.load(open("pyproject.toml", "rb"))
print("\n".join(doc["project"]["dependencies"] + doc["build-system"]["requires"]))')
platforms=()
for tag in manylinux2014 manylinux_2_17 manylinux_2_28 manylinux_2_31 manylinux_2_34; do
    platforms+=(--platform "${tag}_$(uname -m)")
done
echo "== wheels for the image into $wheels"
echo "$requirements" > "$requirements_txt"
"$PYTHON" -m pip download --quiet --only-binary=:all: --python-version 3.11 --implementation cp \
    --abi cp311 --abi abi3 --abi none "${platforms[@]}" --dest "$wheels" --requirement "$requirements_txt"

echo "== docker build -t $TAG"
previous=$(docker image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
log=build/docker-build.log
docker build --tag "$TAG" . > "$log" 2>&1 || { tail -30 "$log" >&2; echo "docker build failed; full log: $log" >&2; exit 1; }
# The image this one replaces, unless something still uses it: rebuilds should not pile up.
if [ -n "$previous" ] && [ "$previous" != "$(docker image inspect --format '{{.Id}}' "$TAG")" ]; then
    docker image rm "$previous" >/dev/null 2>&1 || true
fi
docker/install-compose-plugin.sh
echo "image $TAG ready ($(docker image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%d MB", $1/1e6}')); start a cluster with: docker compose up quorum"
