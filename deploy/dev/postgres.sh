#!/usr/bin/env bash
# Provision a throwaway PostgreSQL with pgvector for tests and the demo.
#
#   deploy/dev/postgres.sh start   install what is missing, start a cluster, print its URL
#   deploy/dev/postgres.sh stop    stop the cluster
#   deploy/dev/postgres.sh url     print the URL of the running cluster
#   deploy/dev/postgres.sh createdb NAME
#                                  start, create database NAME if missing, print its URL
#
# With TEST_DATABASE_URL set, nothing is installed or started: that URL is used as is.
# The cluster lives in $PGWORK (default: .pg in the work tree), runs as the non-root user
# "postgres" and listens on 127.0.0.1:$PGPORT (default 54329) only.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
PGWORK=${PGWORK:-$here/.pg}
PGPORT=${PGPORT:-54329}
PGVER=${PGVER:-15}
bindir=/usr/lib/postgresql/$PGVER/bin
url="postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"

log() { printf 'postgres.sh: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=0
apt_install() {
  if [ $apt_updated -eq 0 ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

ensure_server() {
  if [ ! -x "$bindir/postgres" ]; then
    log "installing postgresql-$PGVER"
    apt_install "postgresql-$PGVER"
  fi
}

ensure_pgvector() {
  local sharedir=/usr/share/postgresql/$PGVER/extension
  [ -f "$sharedir/vector.control" ] && return 0
  log "building pgvector from Debian source (deb-src only, nothing upgraded)"
  apt_install "postgresql-server-dev-$PGVER" build-essential dpkg-dev ca-certificates
  local src=/etc/apt/sources.list.d/sitetools-pgvector-src.sources
  if [ ! -f "$src" ]; then
    as_root tee "$src" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    as_root apt-get update -qq
  fi
  local build
  build=$(mktemp -d)
  (cd "$build" && apt-get source -qq pgvector >/dev/null 2>&1)
  local dir
  dir=$(find "$build" -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)
  make -C "$dir" -s PG_CONFIG="$bindir/pg_config" OPTFLAGS="" >/dev/null
  as_root make -C "$dir" -s PG_CONFIG="$bindir/pg_config" install >/dev/null
  rm -rf "$build"
  [ -f "$sharedir/vector.control" ] || { log "pgvector did not install"; exit 1; }
}

run_pg() {
  # Run a PostgreSQL binary as the unprivileged postgres user.
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

start() {
  if [ -n "${TEST_DATABASE_URL:-}" ]; then
    echo "$TEST_DATABASE_URL"
    return 0
  fi
  ensure_server
  ensure_pgvector
  mkdir -p "$PGWORK"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$PGWORK"
    # The postgres user must be able to reach the data directory.
    local d=$PGWORK
    while [ "$d" != "/" ]; do d=$(dirname "$d"); chmod o+x "$d" 2>/dev/null || true; done
  fi
  if [ ! -f "$PGWORK/data/PG_VERSION" ]; then
    log "initdb in $PGWORK/data"
    run_pg "$bindir/initdb" -D "$PGWORK/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  if run_pg "$bindir/pg_ctl" -D "$PGWORK/data" status >/dev/null 2>&1; then
    echo "$url"
    return 0
  fi
  run_pg "$bindir/pg_ctl" -D "$PGWORK/data" -l "$PGWORK/postgres.log" -w -t 60 start \
    -o "-p $PGPORT -c listen_addresses=127.0.0.1 -k $PGWORK -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" >/dev/null
  echo "$url"
}

stop() {
  [ -n "${TEST_DATABASE_URL:-}" ] && return 0
  [ -f "$PGWORK/data/PG_VERSION" ] || return 0
  run_pg "$bindir/pg_ctl" -D "$PGWORK/data" -m fast -w stop >/dev/null 2>&1 || true
}

createdb() {
  local name=$1 base
  [[ $name =~ ^[a-z_][a-z0-9_]*$ ]] || { log "bad database name $name"; exit 2; }
  base=$(start)
  if [ "$(psql "$base" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$name'")" != 1 ]; then
    psql "$base" -qc "CREATE DATABASE $name" >/dev/null
  fi
  echo "${base%%/postgres\?*}/$name?${base#*\?}"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  createdb) createdb "${2:?database name}" ;;
  url) if [ -n "${TEST_DATABASE_URL:-}" ]; then echo "$TEST_DATABASE_URL"; else echo "$url"; fi ;;
  *) echo "usage: $0 start|stop|url|createdb NAME" >&2; exit 2 ;;
esac
