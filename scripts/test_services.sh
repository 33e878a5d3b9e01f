#!/usr/bin/env bash
# Starts the PostgreSQL and Redis servers the integration tests use (from the
# Debian packages `postgresql` and `redis-server`) and prints, on stdout, an
# `export` line for each service that really answers, so a caller can
#   eval "$(scripts/test_services.sh start)"
# Progress and problems go to stderr. Idempotent: running services are reused.
#
#   scripts/test_services.sh start    start (default)
#   scripts/test_services.sh stop     stop the Redis and PostgreSQL cluster it uses
#
# With HAICO_REQUIRE_ALL_TESTS=1 (CI) a service that cannot be started makes
# the script exit 1. A URL already set in the environment is left alone.
set -u

PG_ROLE=haico
PG_PASSWORD=haico
REDIS_PORT=${HAICO_REDIS_PORT:-6379}
STRICT=${HAICO_REQUIRE_ALL_TESTS:-0}
failed=0

say() { echo "test_services: $*" >&2; }

as_postgres() {
  # The cluster's superuser is the `postgres` OS account (peer auth).
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  elif [ "$(id -un)" = postgres ]; then
    "$@"
  else
    return 1
  fi
}

pg_version() { ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1; }

pg_port() {
  # Port of the `main` cluster of that version (pg_lsclusters: ver cluster port status ...).
  pg_lsclusters -h 2>/dev/null | awk -v v="$1" '$1 == v && $2 == "main" { print $3 }'
}

start_postgres() {
  local ver port
  ver=$(pg_version)
  if [ -z "$ver" ] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
    say "PostgreSQL is not installed (apt-get install postgresql)"
    return 1
  fi
  port=$(pg_port "$ver")
  if [ -z "$port" ]; then
    # Some images install the server without creating the default cluster.
    if [ "$(id -u)" -ne 0 ]; then
      say "no PostgreSQL $ver cluster and not root: cannot create one"
      return 1
    fi
    say "creating PostgreSQL $ver cluster 'main'"
    pg_createcluster "$ver" main >/dev/null 2>&1 || { say "pg_createcluster $ver main failed"; return 1; }
    port=$(pg_port "$ver")
  fi
  if ! pg_isready -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
    say "starting PostgreSQL $ver on port $port"
    pg_ctlcluster "$ver" main start >&2 2>&1 || as_postgres pg_ctlcluster "$ver" main start >&2 2>&1 || true
    for _ in $(seq 1 60); do
      pg_isready -q -h 127.0.0.1 -p "$port" 2>/dev/null && break
      sleep 0.5
    done
  fi
  if ! pg_isready -q -h 127.0.0.1 -p "$port" 2>/dev/null; then
    say "PostgreSQL did not start; log: /var/log/postgresql/postgresql-$ver-main.log"
    return 1
  fi
  # A password-authenticated superuser (the tests create and drop databases).
  as_postgres psql -q -p "$port" -d postgres -v ON_ERROR_STOP=1 >/dev/null 2>&1 <<SQL || true
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_ROLE') THEN
    CREATE ROLE $PG_ROLE LOGIN SUPERUSER PASSWORD '$PG_PASSWORD';
  ELSE
    ALTER ROLE $PG_ROLE LOGIN SUPERUSER PASSWORD '$PG_PASSWORD';
  END IF;
END
\$\$;
SQL
  if ! PGPASSWORD=$PG_PASSWORD PGCONNECT_TIMEOUT=5 psql -q -h 127.0.0.1 -p "$port" -U "$PG_ROLE" -d postgres -tAc "SELECT 1" >/dev/null 2>&1; then
    say "PostgreSQL is up on port $port but role '$PG_ROLE' cannot log in with its password"
    return 1
  fi
  PG_URL="postgres://$PG_ROLE:$PG_PASSWORD@127.0.0.1:$port/postgres"
}

start_redis() {
  if ! command -v redis-server >/dev/null 2>&1; then
    say "Redis is not installed (apt-get install redis-server)"
    return 1
  fi
  if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
    say "starting Redis on port $REDIS_PORT"
    redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
      --daemonize yes --logfile /tmp/haico-test-redis.log >/dev/null 2>&1 || true
    for _ in $(seq 1 40); do
      redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break
      sleep 0.25
    done
  fi
  if ! redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
    say "Redis did not start; log: /tmp/haico-test-redis.log"
    return 1
  fi
  REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
}

case "${1:-start}" in
  start)
    PG_URL="" REDIS_URL=""
    start_postgres || failed=1
    start_redis || failed=1
    if [ -n "$PG_URL" ] && [ -z "${HAICO_TEST_POSTGRES_URL:-}" ]; then
      echo "export HAICO_TEST_POSTGRES_URL=$PG_URL"
    fi
    if [ -n "$REDIS_URL" ] && [ -z "${HAICO_TEST_REDIS_URL:-}" ]; then
      echo "export HAICO_TEST_REDIS_URL=$REDIS_URL"
    fi
    if [ "$failed" -ne 0 ] && [ "$STRICT" = 1 ]; then
      exit 1
    fi
    exit 0
    ;;
  stop)
    redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    ver=$(pg_version)
    if [ -n "$ver" ]; then
      pg_ctlcluster "$ver" main stop >/dev/null 2>&1 || as_postgres pg_ctlcluster "$ver" main stop >/dev/null 2>&1 || true
    fi
    ;;
  *)
    echo "usage: $0 [start|stop]" >&2
    exit 2
    ;;
esac
