# rmqns container: build on Debian 12, run as an unprivileged user.
#   docker build -t rmqns .
#   docker run --rm -p 9876:9876 rmqns
FROM debian:12-slim AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
      meson ninja-build pkg-config gcc libc6-dev libjansson-dev liburcu-dev zlib1g-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY meson.build meson_options.txt ./
COPY include include
COPY src src
COPY tools tools
COPY etc etc
RUN meson setup /build -Dtests=false -Dbuildtype=release \
 && ninja -C /build rmqns

FROM debian:12-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libjansson4 liburcu8 zlib1g \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /var/lib/rmqns rmqns
COPY --from=build /build/rmqns /usr/local/bin/rmqns
# The config file lives in the data directory: UPDATE_NAMESRV_CONFIG persists to it.
COPY --chown=rmqns:rmqns etc/rmqns.conf /var/lib/rmqns/rmqns.conf
USER rmqns
ENV HOME=/var/lib/rmqns
EXPOSE 9876
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/rmqns", "-c", "/var/lib/rmqns/rmqns.conf"]
