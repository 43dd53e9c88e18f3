# cri-winsim images for docker-compose.yml (and `docker build .` alone).
#
#   cri-tools  builds the pinned crictl and critest with scripts/install-tools.mjs, the same
#              script `npm test` runs, so the image and a developer's machine build them alike
#   build      npm ci + npm run build (proto types, then tsc into dist/)
#   prod-deps  npm ci --omit=dev: the production dependencies alone, better-sqlite3's native
#              addon compiled (the app stage copies the compiled node_modules)
#   crictl     a small image with crictl only, for poking at the runtime's socket
#   test       the built project with its dev dependencies, tests, crictl and critest in
#              .tools/bin (compose's `tests` service; `npm test` runs in it)
#   app        (default target) the production image: the compiled program, its runtime files
#              (proto/, examples/) and production dependencies, run as the unprivileged user
#              cri-winsim (uid 10001). ENTRYPOINT dist/src/cli.js (its #! line, written by
#              the build, starts node with the flags of src/tuning/node-flags.ts; Debian's env
#              has -S), so one image serves `runtime` (the default command),
#              `kubelet`, `node` and `demo`:
#                docker run --rm cri-winsim:dev demo
#
# Versions: Node 20 (package.json engines), Go 1.24 (tools/cri-tools/go.mod says go 1.24.1).

ARG NODE_IMAGE=node:20-bookworm-slim
# The full image for the builds: the slim one has no CA certificates, which Go's module
# downloads need (Node carries its own), and no python3, make or g++, which node-gyp needs to
# compile better-sqlite3 when no prebuilt binary can be downloaded.
ARG NODE_BUILD_IMAGE=node:20-bookworm
ARG GO_IMAGE=golang:1.24-bookworm

FROM ${GO_IMAGE} AS go

# The build script is JavaScript, so this stage is Node with the Go toolchain copied in
# (Go's distribution is self-contained under /usr/local/go).
FROM ${NODE_BUILD_IMAGE} AS cri-tools
COPY --from=go /usr/local/go /usr/local/go
# CI=true: a missing or failing Go build is an error here, never a silent skip.
ENV PATH=/usr/local/go/bin:$PATH \
    CI=true
WORKDIR /app
COPY tools/cri-tools/ tools/cri-tools/
# Download the modules in their own layer: go.sum pins every one, so this layer is reused until
# the cri-tools version changes.
RUN cd tools/cri-tools && go mod download
COPY scripts/install-tools.mjs scripts/
# Same flags as on a developer machine: CGO_ENABLED=0, -mod=readonly, -trimpath and the version
# stamped with -ldflags; the script checks that both binaries report the pinned version.
RUN node scripts/install-tools.mjs cri-tools && ls -l .tools/bin/crictl .tools/bin/critest

FROM ${NODE_BUILD_IMAGE} AS build
WORKDIR /app
# node-gyp compiles against the image's own Node headers (the node images ship them under
# /usr/local/include/node) instead of downloading them from nodejs.org.
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM ${NODE_BUILD_IMAGE} AS prod-deps
WORKDIR /app
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
# One install script runs: better-sqlite3's (a prebuilt binary when one can be downloaded, else
# node-gyp builds it here, about four minutes); no other production dependency needs one. Of
# better-sqlite3 only the addon is kept: its SQLite sources and the build's objects are not
# needed to run (26 of its 28 MB). Source maps and type declarations are for editors and
# debuggers, not for node: nearly half of the other dependencies' bytes (46 of 98 MB), most of
# them @kubernetes/client-node's.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 --no-audit --no-fund \
 && addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node \
 && mv "$addon" /tmp/better_sqlite3.node \
 && rm -rf node_modules/better-sqlite3/build node_modules/better-sqlite3/deps node_modules/better-sqlite3/src \
 && mkdir -p node_modules/better-sqlite3/build/Release \
 && mv /tmp/better_sqlite3.node "$addon" \
 && node -e "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()" \
 && find node_modules -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \) -delete

FROM debian:bookworm-slim AS crictl
COPY --from=cri-tools /app/.tools/bin/crictl /usr/local/bin/crictl
# The compose file's shared socket; `-r` on the command line still wins.
RUN printf 'runtime-endpoint: unix:///run/cri-winsim/cri.sock\nimage-endpoint: unix:///run/cri-winsim/cri.sock\ntimeout: 10\n' > /etc/crictl.yaml
ENTRYPOINT ["crictl"]
CMD ["--help"]

# The user both runtime images run as, and the directories the compose volumes mount: a new
# named volume takes the owner of the image's directory, so the runtime can create its socket
# and state there without root.
FROM ${NODE_IMAGE} AS base
RUN groupadd --system --gid 10001 cri-winsim \
 && useradd --system --uid 10001 --gid cri-winsim --home-dir /var/lib/cri-winsim --shell /usr/sbin/nologin cri-winsim \
 && mkdir -p /run/cri-winsim /var/lib/cri-winsim /var/log/pods \
 && chown cri-winsim:cri-winsim /run/cri-winsim /var/lib/cri-winsim /var/log/pods
WORKDIR /app

FROM base AS test
WORKDIR /app
COPY --from=build /app /app
# Where `npm test`'s pretest looks for them (it keeps binaries that report the pinned version).
COPY --from=cri-tools /app/.tools/bin/ /app/.tools/bin/
ENV PATH=/app/.tools/bin:$PATH
USER 10001:10001
ENTRYPOINT ["dist/src/cli.js"]
CMD ["--help"]

FROM base AS app
WORKDIR /app
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="cri-winsim" \
      org.opencontainers.image.description="A simulated Windows Kubernetes node: CRI v1 runtime with GMSA credential specs and RunAsUserName, a fake kubelet, and a simulated Active Directory." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=prod-deps /app/node_modules /app/node_modules
COPY package.json /app/
COPY proto/ /app/proto/
COPY examples/ /app/examples/
# The compiled program only: dist/test and dist/bench stay in the build stage. dist/schemas
# holds the JSON schemas the program imports.
COPY --from=build /app/dist/src /app/dist/src
COPY --from=build /app/dist/schemas /app/dist/schemas
ENV NODE_ENV=production
USER 10001:10001
# A CRI Version call on the runtime's socket (src/healthcheck.ts); a kubelet container that
# mounts the socket reports its runtime's health.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "dist/src/healthcheck.js"]
ENTRYPOINT ["dist/src/cli.js"]
CMD ["runtime", "--listen", "unix:///run/cri-winsim/cri.sock", "--state-dir", "/var/lib/cri-winsim"]
