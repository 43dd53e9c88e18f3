#!/usr/bin/env bash
# Makes sure the base images the Dockerfile names exist in the local Docker Engine.
#
#   scripts/docker-base-images.sh            # check, pull, or build stand-ins as needed
#
# For each of node:20-bookworm-slim, node:20-bookworm, golang:1.24-bookworm and
# debian:bookworm-slim (the Dockerfile's defaults):
#   1. present in the engine already      -> kept as it is;
#   2. its registry's name resolves and `docker pull` gets it -> the real image;
#   3. otherwise (a machine that reaches no image registry) a local stand-in is built under the
#      same name and tag, so the Dockerfile stays what users build from the real images:
#        debian:bookworm-slim   `debootstrap --variant=minbase bookworm` from this machine's
#                               Debian mirror
#        node:20-bookworm-slim  that, plus this machine's Node.js (node, npm and the Node headers
#                               under /usr/local as in the real images, and the `node` user,
#                               uid 1000)
#        node:20-bookworm       that, plus the build tools of the real full image that native
#                               addons need (python3, make, g++, from the Debian mirror): the
#                               Dockerfile compiles better-sqlite3 in stages built on it
#        golang:1.24-bookworm   debian's stand-in plus this machine's Go toolchain in /usr/local/go
#      Every stand-in carries this machine's CA bundle (/etc/ssl/certs/ca-certificates.crt, with
#      SSL_CERT_FILE and NODE_EXTRA_CA_CERTS naming it), so npm and Go inside a build trust the
#      same certificate authorities as the machine. Each is labelled
#      io.cri-winsim.stand-in=true with what it really contains (the machine's Node.js and Go
#      versions may differ from the tag; the script prints them).
# Needs: docker (a running engine), and for stand-ins debootstrap (Debian package `debootstrap`)
# and the Debian mirror (the full node stand-in installs its build tools with apt-get).
# A stand-in an older version of this script built (its io.cri-winsim.stand-in.revision label is
# not the one below) is built again. Stand-ins are never pushed anywhere; `docker rmi` them to go
# back to the real images.
set -euo pipefail

DEBIAN_SUITE=bookworm
# The mirror this machine's apt uses (deb822 sources or sources.list), else Debian's own.
debian_mirror() {
  local uri
  uri="$(sed -n 's/^URIs:[[:space:]]*\(http[^[:space:]]*\/debian\)\/\{0,1\}[[:space:]]*$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1 || true)"
  if [ -z "$uri" ]; then
    uri="$(sed -n 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\(http[^[:space:]]*\/debian\)\/\{0,1\}[[:space:]].*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1 || true)"
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

log() { echo "base-images: $*" >&2; }

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# What the stand-ins of an image contain changed with these revisions (2: the node images carry
# the Node headers, and node:20-bookworm python3, make and g++).
declare -A STAND_IN_REVISION=([node:20-bookworm-slim]=2 [node:20-bookworm]=2)
# An image that is present, and not a stand-in of an earlier revision.
current_image() {
  local image="$1" labels
  have_image "$image" || return 1
  labels="$(docker image inspect --format '{{index .Config.Labels "io.cri-winsim.stand-in"}} {{index .Config.Labels "io.cri-winsim.stand-in.revision"}}' "$image")"
  if [ "${labels%% *}" = true ] && [ "${labels#* }" != "${STAND_IN_REVISION[$image]:-}" ]; then
    log "$image: a stand-in of an earlier revision; building it again"
    return 1
  fi
  return 0
}

# The registry host an image name is pulled from (Docker Hub for the official images).
registry_host() {
  local first="${1%%/*}"
  if [ "$first" != "$1" ] && { [[ "$first" == *.* ]] || [[ "$first" == *:* ]] || [ "$first" = localhost ]; }; then
    echo "${first%%:*}"
  else
    echo registry-1.docker.io
  fi
}

# Pulls the real image when its registry can be reached. The name is resolved first, so on a
# machine without a registry the engine sends nothing anywhere.
try_pull() {
  local image="$1" host
  host="$(registry_host "$image")"
  if ! getent ahosts "$host" >/dev/null 2>&1; then
    log "$image: $host does not resolve here; not pulling"
    return 1
  fi
  log "$image: pulling"
  timeout 600 docker pull --quiet "$image" >&2
}

# One temporary directory for every stand-in, removed on exit (made here, not in a `$(…)`
# subshell, so the trap sees it).
work="$(mktemp -d "${TMPDIR:-/tmp}/cri-winsim-base.XXXXXX")"
cleanup() {
  # debootstrap may leave /proc or /sys mounted in the target when it fails half-way.
  for m in proc sys dev/pts; do
    if mountpoint -q "$work/rootfs/$m" 2>/dev/null; then umount -l "$work/rootfs/$m" || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
workdir() { echo "$work"; }

stand_in_labels() {
  printf -- '--label\nio.cri-winsim.stand-in=true\n--label\norg.opencontainers.image.description=%s\n' "$1"
  if [ -n "${2:-}" ]; then printf -- '--label\nio.cri-winsim.stand-in.revision=%s\n' "$2"; fi
}

build_debian() {
  local image="debian:${DEBIAN_SUITE}-slim" dir mirror
  command -v debootstrap >/dev/null || { log "debootstrap is not installed (apt-get install debootstrap)"; return 1; }
  dir="$(workdir)"
  mirror="$(debian_mirror)"
  log "$image: debootstrap --variant=minbase $DEBIAN_SUITE from $mirror (about a minute)"
  debootstrap --variant=minbase "$DEBIAN_SUITE" "$dir/rootfs" "$mirror" >"$dir/debootstrap.log" 2>&1 || {
    tail -n 30 "$dir/debootstrap.log" >&2
    return 1
  }
  # What the slim image leaves out: package lists and downloaded packages, docs and man pages.
  rm -rf "$dir/rootfs/var/lib/apt/lists/"* "$dir/rootfs/var/cache/apt/"*.bin "$dir/rootfs/var/cache/apt/archives/"*.deb \
    "$dir/rootfs/usr/share/doc/"* "$dir/rootfs/usr/share/man/"* "$dir/rootfs/usr/share/info/"*
  # The machine's CA bundle: builds inside the containers trust what the machine trusts.
  mkdir -p "$dir/rootfs/etc/ssl/certs"
  cp "$CA_BUNDLE" "$dir/rootfs/etc/ssl/certs/ca-certificates.crt"
  tar --numeric-owner -C "$dir/rootfs" -c . | docker import \
    --change 'CMD ["bash"]' \
    --change "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
    --change "LABEL io.cri-winsim.stand-in=true" \
    --change "LABEL org.opencontainers.image.description=\"local stand-in: debootstrap --variant=minbase $DEBIAN_SUITE, the machine's CA bundle\"" \
    - "$image" >/dev/null
  rm -rf "$dir/rootfs"
  log "$image: stand-in built"
}

# The Node headers of this machine's Node.js (node-gyp compiles addons against them): where the
# node binary's prefix keeps them, else where Debian's and NodeSource's packages put them.
node_headers() {
  local prefix d
  prefix="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
  for d in "$prefix/include/node" /usr/include/node /usr/local/include/node; do
    if [ -f "$d/node_version.h" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

# node:20-bookworm-slim: node, npm and the Node headers under /usr/local, as in the real image.
build_node() {
  local dir node_version ctx headers
  dir="$(workdir)"
  ctx="$dir/node"
  mkdir -p "$ctx"
  node_version="$(node --version)"
  case "$node_version" in v20.*) ;; *) log "warning: this machine's Node.js is $node_version, the tags say 20" ;; esac
  headers="$(node_headers)" || { log "this machine's Node.js headers (include/node/node_version.h) are not installed"; return 1; }
  cp "$(command -v node)" "$ctx/node"
  cp -a "$(npm root -g)/npm" "$ctx/npm"
  cp -a "$headers" "$ctx/include-node"
  cat >"$ctx/Dockerfile" <<'EOF'
FROM debian:bookworm-slim
# As in the real node images: node, npm and the Node headers under /usr/local, a `node` user
# with uid 1000.
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
COPY include-node /usr/local/include/node
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && node --version && npm --version
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
CMD ["node"]
EOF
  local labels=()
  mapfile -t labels < <(stand_in_labels "local stand-in: debian:bookworm-slim stand-in + this machine's Node.js $node_version" "${STAND_IN_REVISION[node:20-bookworm-slim]}")
  docker build --quiet --network none "${labels[@]}" -t node:20-bookworm-slim "$ctx" >/dev/null
  rm -rf "$ctx"
  log "node:20-bookworm-slim: stand-in built (Node.js $node_version)"
}

# node:20-bookworm: the slim stand-in plus what the real full image (buildpack-deps underneath)
# has for native addons: python3, make, g++. Built on the host network: apt-get reaches the
# Debian mirror the debian stand-in was bootstrapped from.
build_node_full() {
  local dir ctx node_version
  current_image node:20-bookworm-slim || build_node
  dir="$(workdir)"
  ctx="$dir/node-full"
  mkdir -p "$ctx"
  node_version="$(node --version)"
  cat >"$ctx/Dockerfile" <<'EOF'
FROM node:20-bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/* \
 && python3 --version && make --version | head -n 1 && g++ --version | head -n 1
EOF
  local labels=()
  mapfile -t labels < <(stand_in_labels "local stand-in: node:20-bookworm-slim stand-in + python3, make, g++ (Node.js $node_version)" "${STAND_IN_REVISION[node:20-bookworm]}")
  docker build --quiet --network host "${labels[@]}" -t node:20-bookworm "$ctx" >/dev/null
  rm -rf "$ctx"
  log "node:20-bookworm: stand-in built (Node.js $node_version, python3, make, g++)"
}

build_golang() {
  local dir go_root go_version ctx
  dir="$(workdir)"
  ctx="$dir/golang"
  mkdir -p "$ctx"
  go_root="$(go env GOROOT)"
  go_version="$(go env GOVERSION)"
  cp -a "$go_root" "$ctx/go"
  cat >"$ctx/Dockerfile" <<'EOF'
FROM debian:bookworm-slim
COPY go /usr/local/go
# As in the real golang images.
ENV GOLANG_VERSION=stand-in GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /go/bin /go/src && go version
WORKDIR /go
EOF
  local labels=()
  mapfile -t labels < <(stand_in_labels "local stand-in: debian:bookworm-slim stand-in + this machine's Go $go_version")
  docker build --quiet --network none "${labels[@]}" -t golang:1.24-bookworm "$ctx" >/dev/null
  rm -rf "$ctx"
  log "golang:1.24-bookworm: stand-in built ($go_version)"
}

docker info >/dev/null 2>&1 || { log "no Docker Engine answers (start dockerd first)"; exit 1; }

# debian first: the other stand-ins are built on it.
ensure() {
  local image="$1"
  shift
  if current_image "$image"; then
    log "$image: present"
  elif try_pull "$image"; then
    log "$image: pulled"
  else
    "$@"
  fi
}
ensure debian:bookworm-slim build_debian
ensure node:20-bookworm-slim build_node
ensure node:20-bookworm build_node_full
ensure golang:1.24-bookworm build_golang
