# The service image: Debian, Deno from npm, chromium-headless-shell and fonts installed by the
# same scripts/install_system.sh that CI runs, a non-root user, a health check.
# Build: docker build -t imagehost .   Run: see compose.yaml and README "Deploy".
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive
# Node.js/npm only to fetch Deno from the npm registry (the deno package ships the binary),
# at the exact version the suite runs on. (The base image is named by tag: pin it by digest
# where you build, `FROM debian:bookworm-slim@sha256:…`, from `docker pull`'s RepoDigest.)
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends nodejs npm ca-certificates \
 && npm install -g deno@2.9.6 \
 && npm cache clean --force \
 && rm -rf /var/lib/apt/lists/*

COPY scripts/install_system.sh /tmp/install_system.sh
RUN bash /tmp/install_system.sh runtime && rm -rf /var/lib/apt/lists/* /tmp/install_system.sh

WORKDIR /app
# Deno's cache in the app's folder, owned by the user the service runs as: filled here as
# root, it was root's (in /root/.cache) and the service, as uid 10001, could not use it.
ENV DENO_DIR=/app/.deno
COPY deno.json deno.lock ./
RUN deno install
COPY . .
RUN deno cache main.ts

RUN useradd --system --uid 10001 --home-dir /app imagehost \
 && mkdir -p /data \
 && chown imagehost /data \
 && chown -R imagehost /app/.deno
USER imagehost

ENV DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=8080 \
    MALLOC_ARENA_MAX=1
EXPOSE 8080
VOLUME ["/data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["deno", "run", "--allow-all", "--v8-flags=--max-semi-space-size=1,--heap-growing-percent=50", "main.ts"]
