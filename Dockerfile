# syntax=docker/dockerfile:1.7
# The one Boxyard image: the operator (`boxyard operator`) and every service (`boxyard serve <service>`), run from
# their TypeScript sources by Node 24 (type stripping, no build step).
#
#   docker build -t ghcr.io/boxyard/boxyard:0.1.0 .
#   docker run --rm ghcr.io/boxyard/boxyard:0.1.0 --help
#
# The repository's machines have no Docker engine: `make image` (test/image/build-image.sh) builds the same image
# without one, as a docker-archive for `ctr images import`, and test/image/image-layout.test.ts checks that its
# config and this file agree. The chart (charts/boxyard) and the operator's generated Deployments assume what both
# set up: user and group 10001, `boxyard` on PATH as the entrypoint (session pods run `boxyard terminal-agent`),
# a writable /tmp only (the root filesystem is mounted read-only). User 1000 `user` is the terminal's session user
# (TerminalPool sessionPod runAsUser's default), so a shell's prompt and `whoami` have a name; the node base
# image's own `node` user had that uid and goes.
ARG NODE_IMAGE=node:24-bookworm-slim

# --- dependencies: production packages only; node-pty (terminal) compiles a native addon here --------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# Manifests first, so a source change does not reinstall packages.
COPY package.json package-lock.json ./
COPY services/kit/package.json services/kit/
COPY services/second-service/package.json services/second-service/
COPY services/box-repository/package.json services/box-repository/
COPY services/file-share/package.json services/file-share/
COPY services/terminal/package.json services/terminal/
COPY services/registry/package.json services/registry/
COPY services/boxyard/package.json services/boxyard/
COPY operator/package.json operator/
COPY test/package.json test/
RUN --mount=type=cache,target=/root/.npm npm ci --omit=dev --no-audit --no-fund
COPY services/ services/
COPY operator/ operator/
COPY crds/ crds/

# --- runtime: no compilers, no npm cache, sources owned by root and read-only to the service user ------------------
FROM ${NODE_IMAGE}
LABEL org.opencontainers.image.title="boxyard" \
      org.opencontainers.image.description="Boxyard operator and services: Vagrant box repository, file share, cloud terminals" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin NODE_ENV=production HOME=/tmp
RUN groupadd --system --gid 10001 boxyard \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin boxyard \
 && (userdel node 2>/dev/null || true) && (groupdel node 2>/dev/null || true) \
 && groupadd --gid 1000 user \
 && useradd --uid 1000 --gid 1000 --comment 'Boxyard terminal user' --home-dir /home/user --no-create-home --shell /bin/bash user
WORKDIR /app
COPY --from=build /app /app
# `boxyard` on PATH: `exec node <services/boxyard/node-flags> /app/services/boxyard/src/main.ts "$@"`; build-image.sh
# installs the same file.
COPY --chmod=0755 services/boxyard/bin/boxyard /usr/local/bin/boxyard
USER 10001:10001
# box-repository, file-share, terminal, operator metrics
EXPOSE 3000 3001 3002 8080
ENTRYPOINT ["boxyard"]
CMD ["--help"]
