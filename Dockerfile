# rmqns container: built on Debian 12, run as an unprivileged user.
#   podman build --format docker -t rmqns .      (docker build -t rmqns . works too)
#   podman run --rm -p 127.0.0.1:9876:9876 -v rmqns-data:/var/lib/rmqns rmqns
# Options: append --KEY=VALUE arguments, set RMQNS_<option> variables, or
# mount a directory holding rmqns.conf at /var/lib/rmqns (the file must be
# writable by uid 10001: UPDATE_NAMESRV_CONFIG rewrites it). apache/rocketmq's
# commands work too: `sh mqnamesrv`, `mqnamesrv -c FILE`.
# `--format docker` keeps the HEALTHCHECK under podman.
# tools/container-test.sh builds and checks this image in CI.

FROM debian:12-slim AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      meson ninja-build pkg-config gcc libc6-dev libjansson-dev liburcu-dev zlib1g-dev \
      libyaml-dev libssl-dev libcrypt-dev libraft-dev libuv1-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY meson.build meson_options.txt ./
COPY include include
COPY src src
# Only the tools' sources: a change to a script does not rebuild the binaries.
COPY tools/meson.build tools/
COPY tools/admin tools/admin
COPY tools/bench tools/bench
COPY tools/floor tools/floor
RUN meson setup /build -Dtests=false -Dsystem_files=false -Dbuildtype=release \
 && ninja -C /build rmqns tools/admin/rmqns-admin tools/bench/rmqns-bench \
 && strip /build/rmqns /build/tools/admin/rmqns-admin /build/tools/bench/rmqns-bench

# The runtime libraries and the user, shared by the server image and the
# broker simulator below.
FROM debian:12-slim AS base
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libjansson4 liburcu8 zlib1g libyaml-0-2 libssl3 libraft2 libuv1 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
 && groupadd --system --gid 10001 rmqns \
 && useradd --system --uid 10001 --gid rmqns --create-home --home-dir /var/lib/rmqns rmqns

# Broker simulator for deploy/compose.yaml and the CI (podman build --target broker-sim):
# rmqns-bench seed registers brokers with every NameServer and keeps them alive.
FROM base AS broker-sim
COPY --from=build /build/tools/bench/rmqns-bench /build/tools/admin/rmqns-admin /usr/local/bin/
USER rmqns
ENTRYPOINT ["/usr/local/bin/rmqns-bench"]

# The server image: rmqns, rmqns-admin, their libraries and etc/.
FROM base
COPY --from=build /build/rmqns /build/tools/admin/rmqns-admin /usr/local/bin/
COPY etc/ /usr/local/share/rmqns/etc/
# The config file and the KV file (namesrv/kvConfig.json) live in the data
# volume; UPDATE_NAMESRV_CONFIG persists to the config file, next to its .bak.
# With aclEnable=true the accounts file is $ROCKETMQ_HOME/conf/plain_acl.yml,
# i.e. /var/lib/rmqns/conf/plain_acl.yml (a sample: etc/plain_acl.yml).
# httpPort is the metrics and health endpoint (/metrics, /healthz, /readyz);
# the route snapshot (warm restart) lives in the data volume too.
# /usr/local/share/rmqns/rmqns.conf is the image's default; mqnamesrv copies
# it into a volume that has none.
RUN printf '\n# Container image: HTTP endpoint on 8080, routes kept across restarts.\nhttpPort=8080\nrouteSnapshotPath=/var/lib/rmqns/namesrv/routes.snapshot\n' \
      | cat /usr/local/share/rmqns/etc/rmqns.conf - >/usr/local/share/rmqns/rmqns.conf \
 && install -d -o rmqns -g rmqns -m 0750 /var/lib/rmqns/namesrv \
 && install -o rmqns -g rmqns -m 0640 /usr/local/share/rmqns/rmqns.conf /var/lib/rmqns/rmqns.conf
# The entrypoint (mqnamesrv) and the health check; apart from the binaries,
# so that a change to them rebuilds nothing else.
COPY deploy/image/mqnamesrv deploy/image/rmqns-healthcheck /usr/local/bin/
VOLUME /var/lib/rmqns
USER rmqns
# As apache/rocketmq's image, start in the directory holding mqnamesrv, so
# that `sh mqnamesrv` finds it; every path rmqns uses is absolute.
WORKDIR /usr/local/bin
ENV HOME=/var/lib/rmqns ROCKETMQ_HOME=/var/lib/rmqns NAMESRV_ADDR=127.0.0.1:9876
# 9876: the RocketMQ protocol; 8080: HTTP (httpPort, port name "http" in deploy/k8s).
EXPOSE 9876 8080
# A real request, not a TCP connect: a frozen server (SIGSTOP) still accepts
# connections in the kernel but answers nothing. rmqns-healthcheck reads the
# server's options in force (ports, httpPort, tls.server.mode) itself.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/rmqns-healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/mqnamesrv"]
# OCI labels; the version is meson.build's project version (CI checks it).
ARG RMQNS_VERSION=0.1.0
ARG RMQNS_REVISION=
ARG RMQNS_SOURCE=
LABEL org.opencontainers.image.title="rmqns" \
      org.opencontainers.image.description="A RocketMQ NameServer in C" \
      org.opencontainers.image.version="${RMQNS_VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.revision="${RMQNS_REVISION}" \
      org.opencontainers.image.source="${RMQNS_SOURCE}"
