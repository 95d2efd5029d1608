#!/usr/bin/env bash
# make images: every service image, built on a machine that can pull no registry image.
#
#   1. koholint/python:3.11-bookworm, a base made from Debian's packages (debootstrap, then
#      docker import): Python 3.11 with venv and pip, CA certificates, the OpenMP runtime.
#   2. docker/wheels, a wheelhouse of everything the images install (pip wheel, from pip's
#      cache where `make setup` already built it: llama-cpp-python is compiled once).
#   3. each docker/Dockerfile.<service> built FROM that base with pip reading the wheelhouse
#      alone (PIP_NO_INDEX=1): nothing is downloaded or compiled inside an image.
#
#   4. each build stage's images (label koholint.stage=build) and the image a rebuild untagged
#      removed once the service is built, the wheelhouse at the end: what stays on disk is the
#      base and the service images (6.6 GB; the build needs ~10 GB at its peak).
#
# A machine that can pull python:3.11-slim needs none of this: `docker compose build`.
# Env: BASE_IMAGE (skip step 1 with an image you have), SERVICES (a subset), PYTHON (the venv's
# interpreter for step 2), DEBIAN_MIRROR, KEEP_BUILD=1 (keep the build stages and
# docker/wheels: a rebuild then takes them from the cache),
# MIN_FREE_GB (the free space the build asks for before it starts).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE_IMAGE=${BASE_IMAGE:-koholint/python:3.11-bookworm}
PYTHON=${PYTHON:-.venv/bin/python}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
LOGS=${LOGS:-build/images}
SERVICES=${SERVICES-env-sim trainer planner llm-local evaluator reward-model console standins}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
WHEELS=docker/wheels
MIN_FREE_GB=${MIN_FREE_GB:-12}

log() { printf '%s [images] %s\n' "$(date +%H:%M:%S)" "$*"; }

# free_gb DIR: the free space of DIR's file system in whole GB.
free_gb() { df --output=avail -B1G "$1" | tail -1 | tr -d ' '; }

# The build writes the wheelhouse here and the layers under the engine's root: refuse to start
# rather than fail half-way with "no space left on device".
check_disk() {
    local root free_root free_here
    root=$(docker info --format '{{.DockerRootDir}}')
    free_here=$(free_gb .)
    free_root=$(free_gb "$root" 2>/dev/null || echo "$free_here")
    log "free: ${free_here} GB here, ${free_root} GB under $root"
    if ((free_root < MIN_FREE_GB)); then
        log "the images need about $MIN_FREE_GB GB free under $root while they build, and" \
            "${free_root} GB are: free space (docker system prune, docker builder prune) or set" \
            "MIN_FREE_GB lower if you know the build fits" >&2
        return 1
    fi
}

# A build stage's images (the wheelhouse copied in, a venv) are only the way to a service
# image: removed as soon as it is built, so the disk holds one at a time (peak ~10 GB, not
# ~15); a rebuilt image leaves the previous one untagged.
drop_build_stages() {
    docker image prune --force --filter label=koholint.stage=final >/dev/null
    [[ "${KEEP_BUILD:-0}" == 1 ]] && return
    docker image prune --all --force --filter label=koholint.stage=build >/dev/null
}

clean_up() {
    [[ "${KEEP_BUILD:-0}" == 1 ]] && return
    find "$WHEELS" -mindepth 1 ! -name .gitignore -delete
    log "build stages and wheelhouse removed; free now: $(free_gb .) GB"
}

build_base() {
    if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        log "base $BASE_IMAGE exists"
        return
    fi
    local root
    root=$(mktemp -d /tmp/koholint-base.XXXXXX)
    trap 'rm -rf "$root"' RETURN
    log "base $BASE_IMAGE: debootstrap bookworm into $root"
    debootstrap --variant=minbase \
        --include=python3.11,python3.11-venv,python3-pip,ca-certificates,libgomp1 \
        bookworm "$root" "$DEBIAN_MIRROR" >/dev/null
    ln -sf /usr/bin/python3.11 "$root/usr/local/bin/python"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["python"]' - "$BASE_IMAGE" >/dev/null
}

build_wheelhouse() {
    log "wheelhouse $WHEELS"
    # Build requirements too (setuptools, wheel): the images build the project with no index.
    # async-timeout: redis needs it below Python 3.11.3 (Debian's 3.11.2), not on this venv's.
    CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" "$PYTHON" -m pip wheel --quiet \
        --wheel-dir "$WHEELS" pip setuptools wheel "torch==$TORCH_VERSION" '.[all]' \
        'moto[server]' boto3 'async-timeout>=4.0.3' >"$LOGS/wheelhouse.log" 2>&1 \
        || { grep -v '^WARNING: Location' "$LOGS/wheelhouse.log" | tail -20 >&2; return 1; }
    rm -f "$WHEELS"/koholint-*.whl  # the images install the project from its source
}

build_service() {
    local service=$1
    log "image koholint/$service:local"
    local started=$SECONDS
    docker build --file "docker/Dockerfile.$service" --tag "koholint/$service:local" \
        --build-arg "BASE_IMAGE=$BASE_IMAGE" --build-arg PIP_NO_INDEX=1 . >"$LOGS/$service.log" 2>&1 \
        || { tail -20 "$LOGS/$service.log" >&2; return 1; }
    log "  built in $((SECONDS - started)) s (log $LOGS/$service.log)"
    drop_build_stages
}

mkdir -p "$LOGS"
check_disk
build_base
build_wheelhouse
for service in $SERVICES; do build_service "$service"; done
clean_up
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^koholint/' | sort
