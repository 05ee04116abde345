#!/usr/bin/env bash
# The whole test suite: type check, lint, format check, every test file, OpenAPI drift + lint.
# Installs Chromium when it is missing and we may (root + apt), else fails naming it.
# Runs the database tests on PostgreSQL too when TEST_DATABASE_URL is set (.ci/run sets it).
set -uo pipefail
cd "$(dirname "$0")/.."
if command -v deno >/dev/null 2>&1; then DENO=(deno); else DENO=(npx -y deno@2); fi

find_chromium() {
  for p in "${CHROMIUM_PATH:-}" /usr/lib/chromium/chromium-headless-shell /usr/lib/chromium/chromium \
    /usr/bin/chromium-headless-shell /usr/bin/chromium; do
    [ -n "$p" ] && [ -x "$p" ] && { echo "$p"; return 0; }
  done
  return 1
}
if ! find_chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Chromium not found: installing Debian's chromium and chromium-headless-shell" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-headless-shell) >&2
  fi
fi
if ! CHROMIUM=$(find_chromium); then
  echo "FAIL: the screenshot and SDK tests need Chromium: apt-get install -y chromium chromium-headless-shell (or set CHROMIUM_PATH)" >&2
  exit 1
fi
export TEST_CHROMIUM_PATH="$CHROMIUM"

status=0
"${DENO[@]}" install --quiet >/dev/null 2>&1 || true
# Each failing step says so by name, so a red run is never a mystery in the log.
"${DENO[@]}" fmt --check || { status=1; echo "FAIL: deno fmt --check" >&2; }
"${DENO[@]}" lint || { status=1; echo "FAIL: deno lint" >&2; }
"${DENO[@]}" task check || { status=1; echo "FAIL: deno task check" >&2; }

log=$(mktemp)
"${DENO[@]}" test -A --parallel tests/ 2>&1 | tee "$log"
test_rc=${PIPESTATUS[0]}
[ "$test_rc" = 0 ] || { status=1; echo "FAIL: deno test exited with status $test_rc" >&2; }
summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '(ok|FAILED) \| [0-9]+ passed' | tail -n1)
passed=$(echo "$summary" | sed -E 's/.* ([0-9]+) passed.*/\1/')
failed=$(echo "$summary" | sed -E 's/.* ([0-9]+) failed.*/\1/')
rm -f "$log"
echo
echo "tests: ${passed:-0} passed, ${failed:-0} failed"
[ "$status" = 0 ] && [ "${passed:-0}" -gt 0 ] || exit 1
