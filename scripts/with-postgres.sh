#!/usr/bin/env bash
# Run a command with a throwaway PostgreSQL on loopback: initdb into a temporary directory, start
# it on a free port, export DIALECTIC_TEST_PG_URL, run the command, stop the server, delete the data.
# Installs Debian's postgresql package when no server binaries are found.
set -euo pipefail

find_bin() {
  local dir
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"; return 0
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x $dir/pg_ctl && -x $dir/initdb ]] && { echo "$dir"; return 0; }
  done
  return 1
}

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }

if ! PGBIN=$(find_bin); then
  echo "with-postgres: no PostgreSQL server binaries; installing Debian's postgresql package" >&2
  as_root apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >&2
  PGBIN=$(find_bin) || { echo "with-postgres: PostgreSQL is still missing after install" >&2; exit 1; }
fi

# PostgreSQL will not run as root: run it as the 'postgres' user (created if the package did not).
RUN=()
if [[ $(id -u) -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
  RUN=(runuser -u postgres --)
fi

DATA=$(mktemp -d "${TMPDIR:-/tmp}/dialectic-pg.XXXXXX")
chmod 755 "$DATA"
[[ ${#RUN[@]} -gt 0 ]] && chown postgres "$DATA"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

cleanup() {
  "${RUN[@]}" "$PGBIN/pg_ctl" -D "$DATA/db" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$DATA"
}
trap cleanup EXIT INT TERM

"${RUN[@]}" "$PGBIN/initdb" -D "$DATA/db" -U postgres --auth=trust -E UTF8 --no-sync >"$DATA/initdb.log" 2>&1 \
  || { cat "$DATA/initdb.log" >&2; exit 1; }
"${RUN[@]}" "$PGBIN/pg_ctl" -D "$DATA/db" -l "$DATA/server.log" -w -t 60 \
  -o "-h 127.0.0.1 -p $PORT -k $DATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
  start >/dev/null || { cat "$DATA/server.log" >&2; exit 1; }
"${RUN[@]}" "$PGBIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres dialectic_test

export DIALECTIC_TEST_PG_URL="postgresql+asyncpg://postgres@127.0.0.1:$PORT/dialectic_test"
echo "with-postgres: PostgreSQL $("$PGBIN/pg_ctl" --version | awk '{print $3}') on 127.0.0.1:$PORT" >&2
set +e
"$@"
status=$?
set -e
exit $status
