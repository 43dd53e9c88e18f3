#!/usr/bin/env bash
# The README's docker-compose commands, run for real against a Docker Engine (CI runs this after
# `npm test`; anyone can run it on a Linux machine, as root when it has to install or start
# Docker):
#
#   1. Docker Engine and Compose: used as found (`docker compose` v2, else `docker-compose`);
#      when missing, Debian's packages are installed (docker.io, docker-compose, debootstrap).
#   2. dockerd: used when one answers; otherwise started here (no default bridge, no iptables
#      rules: the compose services have no network) and stopped at the end. Nothing else is
#      stopped.
#   3. Base images: scripts/docker-base-images.sh (real ones when a registry is reachable,
#      local stand-ins otherwise).
#   4. `up --build -d runtime kubelet crictl`: crictl's `ps --all` must list every container of
#      the kubelet's example pods, Running; `run --rm tests` (critest in compose) must pass;
#      `down --volumes` always, then no container, network or volume of the project may be
#      left. The images stay (the next run reuses their layers).
#
# Environment: COMPOSE_PROJECT_NAME (default cri-winsim-ci), CRI_WINSIM_DOCKERD_ARGS (extra
# dockerd arguments when this script starts it).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
export COMPOSE_PROJECT_NAME="${COMPOSE_PROJECT_NAME:-cri-winsim-ci}"
project="$COMPOSE_PROJECT_NAME"

log() { echo "compose-ci: $*" >&2; }
step() {
  log "$* (at ${SECONDS}s)"
}

# --- 1. Docker Engine and Compose -------------------------------------------------------------
apt_updated=""
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    log "missing: $* (Debian packages); run as root or install them"
    exit 1
  fi
  if [ -z "$apt_updated" ]; then
    apt-get update -qq
    apt_updated=1
  fi
  step "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

engine_answers() { docker info >/dev/null 2>&1; }

missing=()
if ! engine_answers; then
  command -v dockerd >/dev/null || missing+=(docker.io)
fi
command -v docker >/dev/null || missing+=(docker.io)
if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null; then
  missing+=(docker-compose)
fi
# For stand-in base images, when no registry is reachable (decided by docker-base-images.sh).
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  apt_install "${missing[@]}"
fi

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  compose=(docker-compose)
  # Compose 1.x builds through the Docker CLI with BuildKit by default; without the buildx
  # plugin the CLI cannot, so it builds through the Engine API (the classic builder) instead.
  if ! docker buildx version >/dev/null 2>&1; then
    export COMPOSE_DOCKER_CLI_BUILD=0 DOCKER_BUILDKIT=0
  fi
fi
log "compose: ${compose[*]} ($("${compose[@]}" version --short 2>/dev/null || "${compose[@]}" version | head -n 1))"

# --- 2. dockerd --------------------------------------------------------------------------------
dockerd_pid=""
dockerd_log=""
stop_dockerd() {
  [ -n "$dockerd_pid" ] || return 0
  local containerd_pid=""
  containerd_pid="$(cat /var/run/docker/containerd/containerd.pid 2>/dev/null || true)"
  step "stopping the dockerd this script started (pid $dockerd_pid)"
  kill -TERM "$dockerd_pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 1
  done
  if kill -0 "$dockerd_pid" 2>/dev/null; then
    log "dockerd did not stop in 60 s; killing it"
    kill -KILL "$dockerd_pid" 2>/dev/null || true
  fi
  wait "$dockerd_pid" 2>/dev/null || true
  # dockerd stops the containerd it started; make sure, without touching any other one.
  if [ -n "$containerd_pid" ] && kill -0 "$containerd_pid" 2>/dev/null \
    && [ "$(ps -o ppid= -p "$containerd_pid" | tr -d ' ')" = "$dockerd_pid" ]; then
    kill -TERM "$containerd_pid" 2>/dev/null || true
  fi
  dockerd_pid=""
  rm -f "$dockerd_log"
}

start_dockerd() {
  # A pid file of a dockerd that died keeps a new one from starting.
  local pidfile=/var/run/docker.pid
  if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then rm -f "$pidfile"; fi
  dockerd_log="$(mktemp "${TMPDIR:-/tmp}/cri-winsim-dockerd.XXXXXX")"
  step "starting dockerd"
  # --bridge=none: no docker0 and so no container address on a private range; no iptables
  # rules either (the services have no network; builds use the host's).
  # shellcheck disable=SC2086
  dockerd --bridge=none --iptables=false --storage-driver=overlay2 ${CRI_WINSIM_DOCKERD_ARGS:-} \
    >"$dockerd_log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 1 60); do
    engine_answers && return 0
    if ! kill -0 "$dockerd_pid" 2>/dev/null; then break; fi
    sleep 1
  done
  log "dockerd did not answer; its log:"
  tail -n 40 "$dockerd_log" >&2
  exit 1
}

compose_up=""
finish() {
  local rc=$?
  set +e
  if [ -n "$compose_up" ]; then
    if [ "$rc" -ne 0 ]; then
      log "failed; the services' logs:"
      "${compose[@]}" logs --no-color --tail=60 >&2
    fi
    step "down --volumes"
    "${compose[@]}" down --volumes --remove-orphans >&2 || rc=1
  fi
  stop_dockerd
  log "finished in ${SECONDS}s, exit $rc"
  exit "$rc"
}
trap finish EXIT

if ! engine_answers; then start_dockerd; fi

# --- 3. Base images ----------------------------------------------------------------------------
step "base images"
scripts/docker-base-images.sh

# --- 4. The README's commands ------------------------------------------------------------------
compose_up=1
step "build tests"
timeout 30m "${compose[@]}" build tests
step "up --build -d runtime kubelet crictl"
timeout 30m "${compose[@]}" up --build -d runtime kubelet crictl

# crictl's one-shot `ps --all` ran after the kubelet completed; wait for it to exit. (By labels:
# `docker compose ps` v2 lists running containers only.)
crictl_id="$(docker ps -aq --filter "label=com.docker.compose.project=$project" --filter label=com.docker.compose.service=crictl)"
[ -n "$crictl_id" ] || { log "no crictl container"; exit 1; }
timeout 120 docker wait "$crictl_id" >/dev/null
crictl_out="$(docker logs "$crictl_id" 2>&1)"
echo "$crictl_out"
crictl_exit="$(docker inspect --format '{{.State.ExitCode}}' "$crictl_id")"
[ "$crictl_exit" = 0 ] || { log "crictl exited $crictl_exit"; exit 1; }

# Every container of the pod files the kubelet service runs, Running (names from the files).
mapfile -t expected < <(node --input-type=module -e '
  import { readFileSync } from "node:fs";
  import { parse, parseAllDocuments } from "yaml";
  const compose = parse(readFileSync("docker-compose.yml", "utf8"));
  for (const file of compose.services.kubelet.command.filter((a) => /\.ya?ml$/.test(a))) {
    for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
      for (const c of doc.toJS()?.spec?.containers ?? []) console.log(c.name);
    }
  }')
[ "${#expected[@]}" -gt 0 ] || { log "no containers in the kubelet's pod files"; exit 1; }
for name in "${expected[@]}"; do
  if ! awk -v n="$name" '$0 ~ /Running/ { for (i = 1; i <= NF; i++) if ($i == n) found = 1 } END { exit !found }' <<<"$crictl_out"; then
    log "crictl ps --all does not list container $name as Running"
    exit 1
  fi
done
log "crictl ps --all lists the ${#expected[@]} example containers, Running: ${expected[*]}"

# No container of the project may have a network of its own (docker-compose.yml: network_mode
# none, or the runtime's namespace for its clients), so none sends a packet anywhere but a loopback.
runtime_id="$(docker ps -aq --no-trunc --filter "label=com.docker.compose.project=$project" --filter "label=com.docker.compose.service=runtime" | head -n 1)"
for id in $(docker ps -aq --filter "label=com.docker.compose.project=$project"); do
  mode="$(docker inspect --format '{{.Name}} {{.HostConfig.NetworkMode}}' "$id")"
  case "${mode#* }" in
    none | "container:$runtime_id") ;;
    *) log "container with a network: $mode"; exit 1 ;;
  esac
done

step "run --rm tests"
timeout 15m "${compose[@]}" run --rm tests

step "down --volumes"
"${compose[@]}" down --volumes --remove-orphans
compose_up=""

# The production image alone, as the README runs it: the demo table; no root, no tests, no dev
# dependencies in it.
step "docker run --rm cri-winsim:dev demo"
demo_out="$(timeout 300 docker run --rm --network none cri-winsim:dev demo)"
echo "$demo_out"
grep -Eq '^([0-9]+) of \1 results as expected\.$' <<<"$demo_out" || { log "the demo did not print its table"; exit 1; }
user="$(docker image inspect --format '{{.Config.User}}' cri-winsim:dev)"
[ "$user" = 10001:10001 ] || { log "cri-winsim:dev runs as '$user', not 10001:10001"; exit 1; }
[ -n "$(docker image inspect --format '{{if .Config.Healthcheck}}{{.Config.Healthcheck.Test}}{{end}}' cri-winsim:dev)" ] \
  || { log "cri-winsim:dev has no HEALTHCHECK"; exit 1; }
[ "$(docker image inspect --format '{{index .Config.Labels "org.opencontainers.image.title"}}' cri-winsim:dev)" = cri-winsim ] \
  || { log "cri-winsim:dev lacks its OCI labels"; exit 1; }
docker run --rm --network none --entrypoint sh cri-winsim:dev -c \
  'for p in dist/test dist/bench src test node_modules/mocha node_modules/typescript node_modules/tmp-promise; do
     if [ -e "$p" ]; then echo "the production image holds $p" >&2; exit 1; fi
   done' || exit 1
docker image ls --format 'image {{.Repository}}:{{.Tag}} {{.Size}}' | grep '^image cri-winsim' | sort >&2

left="$(docker ps -aq --filter "label=com.docker.compose.project=$project")"
left_volumes="$(docker volume ls -q --filter "label=com.docker.compose.project=$project")"
left_networks="$(docker network ls -q --filter "label=com.docker.compose.project=$project")"
if [ -n "$left$left_volumes$left_networks" ]; then
  log "left behind: containers [$left] volumes [$left_volumes] networks [$left_networks]"
  exit 1
fi
log "passed: examples listed by crictl, critest passed, nothing left"
