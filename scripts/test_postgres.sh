#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on a free 127.0.0.1 port and prints its URL.
# Needs Debian's postgresql package. Usage: eval "$(bash scripts/test_postgres.sh)"
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -x "$bin/initdb" ] || { echo "postgresql is not installed (apt-get install -y postgresql)" >&2; exit 1; }
dir=$(mktemp -d /tmp/imagehost-pg-XXXXXX)
chown postgres "$dir" 2>/dev/null || true
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi; }
as_pg "$bin/initdb -D $dir/data -U postgres -A trust >/dev/null"
as_pg "$bin/pg_ctl -D $dir/data -l $dir/log -w -o '-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off' start >/dev/null"
echo "export TEST_DATABASE_URL=postgres://postgres@127.0.0.1:$port/postgres"
echo "export TEST_PG_DIR=$dir"
