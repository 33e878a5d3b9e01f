#!/usr/bin/env bash
# Starts the PostgreSQL and Redis servers the integration tests use, when the
# Debian packages are installed, and prints the URLs to export. Idempotent.
set -u
case "${1:-start}" in
  start)
    if command -v redis-server >/dev/null 2>&1; then
      if ! redis-cli -p 6379 ping >/dev/null 2>&1; then
        redis-server --port 6379 --save '' --appendonly no --daemonize yes >/dev/null
      fi
    fi
    if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
      if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
        (pg_ctlcluster "$(ls /usr/lib/postgresql | sort -n | tail -1)" main start) >/dev/null 2>&1 || true
        for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
      fi
      su postgres -c "psql -q -tc \"SELECT 1 FROM pg_roles WHERE rolname='haico'\" | grep -q 1 || psql -q -c \"CREATE ROLE haico LOGIN SUPERUSER PASSWORD 'haico'\"" >/dev/null 2>&1 || true
    fi
    ;;
esac
