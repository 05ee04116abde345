#!/usr/bin/env bash
# The one list of Debian packages this service needs, used by everything that installs them:
#   runtime  what a running instance needs to do its whole job: Chromium's headless shell for
#            screenshots, the fonts pages expect (Latin, CJK, colour emoji), socat for the
#            browser service (scripts/browser.sh), util-linux's setpriv (Chromium dies with
#            the service). The Dockerfile and `deno task start`'s first-run installer call this.
#   test     runtime plus what the suite starts: full Chromium (SDK page tests), PostgreSQL,
#            nginx (the cluster test's load balancer), iproute2 (network namespaces).
#            prometheus (a real scrape of /metrics and promtool in the metrics test),
#            unzip (the account export is checked by another implementation).
#            .ci/run calls this.
#   bench    test plus wrk, which the serve benchmark drives nginx and the service with.
# Installs only what is missing; needs root and apt-get.
set -euo pipefail
want=${1:-runtime}
pkgs=(chromium-headless-shell fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji socat ca-certificates util-linux)
if [ "$want" = test ] || [ "$want" = bench ]; then
  pkgs+=(chromium postgresql nginx iproute2 curl openssl prometheus unzip)
  [ "$want" = bench ] && pkgs+=(wrk)
elif [ "$want" != runtime ]; then
  echo "usage: $0 runtime|test|bench" >&2
  exit 2
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "missing Debian packages: ${missing[*]}; as root: bash $0 $want" >&2
  exit 1
fi
echo "installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
