#!/usr/bin/env bash
# The browser service of a scaled-out deployment (compose.yaml's "browser", and the tests'
# remote browser): Chromium's DevTools endpoint for app instances on other hosts.
# Chromium binds DevTools to loopback only (it ignores --remote-debugging-address), so socat
# forwards BROWSER_LISTEN:BROWSER_PORT to it. Instances point BROWSER_WS_ENDPOINT at
# http://<this host>:BROWSER_PORT and find the current ws URL themselves.
# Expose it only to the app instances: DevTools is full control of the browser.
set -euo pipefail
listen=${BROWSER_LISTEN:-0.0.0.0}
port=${BROWSER_PORT:-9222}
inner=${BROWSER_INNER_PORT:-$((port + 1))}
chromium=${CHROMIUM_PATH:-}
if [ -z "$chromium" ]; then
  for p in /usr/lib/chromium/chromium-headless-shell /usr/bin/chromium-headless-shell /usr/lib/chromium/chromium; do
    [ -x "$p" ] && { chromium=$p; break; }
  done
fi
[ -x "$chromium" ] || { echo "no Chromium: apt-get install -y chromium-headless-shell" >&2; exit 1; }
command -v socat >/dev/null || { echo "socat is missing: apt-get install -y socat" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/imagehost-browser-XXXXXX")
flags=(--headless "--remote-debugging-port=$inner" "--user-data-dir=$dir"
  --disable-background-networking --disable-component-update --disable-sync --no-first-run
  --disable-quic --disable-dev-shm-usage --disable-gpu --mute-audio --hide-scrollbars)
[ "$(id -u)" = 0 ] && flags+=(--no-sandbox)
"$chromium" "${flags[@]}" about:blank >/dev/null 2>&1 &
cpid=$!
socat "TCP-LISTEN:$port,bind=$listen,fork,reuseaddr" "TCP:127.0.0.1:$inner" &
spid=$!
trap 'kill $cpid $spid 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
echo "browser: DevTools on http://$listen:$port (pid $cpid)"
# Either one ending ends the service, so its supervisor restarts the pair.
wait -n "$cpid" "$spid"
