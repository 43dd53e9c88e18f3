# cri-winsim images for docker-compose.yml (and `docker build .` alone).
#
#   cri-tools  builds the pinned crictl and critest with scripts/install-tools.mjs, the same
#              script `npm test` runs, so the image and a developer's machine build them alike
#   build      npm ci + npm run build (proto types, then tsc into dist/)
#   crictl     a small image with crictl only, for poking at the runtime's socket
#   app        (default target) the built project, crictl and critest in .tools/bin;
#              ENTRYPOINT `node --single-threaded-gc --max-semi-space-size=4 dist/src/cli.js` (the `cri-winsim` command, src/node-flags.ts)
#
# Versions: Node 20 (package.json engines), Go 1.24 (tools/cri-tools/go.mod says go 1.24.1).

ARG NODE_IMAGE=node:20-bookworm-slim
# The full image for the Go build: the slim one has no CA certificates, which Go's module
# downloads need (Node carries its own).
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

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM debian:bookworm-slim AS crictl
COPY --from=cri-tools /app/.tools/bin/crictl /usr/local/bin/crictl
# The compose file's shared socket; `-r` on the command line still wins.
RUN printf 'runtime-endpoint: unix:///run/cri-winsim/cri.sock\nimage-endpoint: unix:///run/cri-winsim/cri.sock\ntimeout: 10\n' > /etc/crictl.yaml
ENTRYPOINT ["crictl"]
CMD ["--help"]

FROM ${NODE_IMAGE} AS app
WORKDIR /app
COPY --from=build /app /app
# Where `npm test`'s pretest looks for them (it keeps binaries that report the pinned version).
COPY --from=cri-tools /app/.tools/bin/ /app/.tools/bin/
ENV PATH=/app/.tools/bin:$PATH
RUN mkdir -p /run/cri-winsim /var/lib/cri-winsim /var/log/pods
ENTRYPOINT ["node", "--single-threaded-gc", "--max-semi-space-size=4", "dist/src/cli.js"]
CMD ["runtime", "--listen", "unix:///run/cri-winsim/cri.sock", "--state-dir", "/var/lib/cri-winsim"]
