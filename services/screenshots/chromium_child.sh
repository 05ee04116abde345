#!/bin/sh
# Starts Chromium so that it dies with the service. setpriv sets the parent-death signal
# (PR_SET_PDEATHSIG) and then execs Chromium in the same process, whose parent is the
# service itself: a kill -9 of the service takes the browser with it, and its helpers
# follow their browser. The real binary comes in IMAGEHOST_CHROMIUM. Without setpriv
# (util-linux), Chromium runs as it is and start-up reaps what a dead service left.
if command -v setpriv >/dev/null 2>&1; then
  exec setpriv --pdeathsig KILL -- "$IMAGEHOST_CHROMIUM" "$@"
fi
exec "$IMAGEHOST_CHROMIUM" "$@"
