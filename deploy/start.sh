#!/usr/bin/env bash
# The production start (docs/adr/0058), the same everywhere: `./dev prod`,
# the container (Dockerfile) and the CI test behind nginx
# (tests/browser/test_behind_proxy.py) all run this script.
#
#   deploy/start.sh [PORT]
#
# 1. refuses a setup that cannot work: several processes need PostgreSQL
#    (DATABASE_URL) and Redis (REDIS_URL);
# 2. runs `check --deploy`, whose every warning stops the start, applies
#    the migrations and collects the static files (hashed and compressed,
#    served by the app itself);
# 3. starts HAICO_WEB_PROCESSES server processes (daphne on uvloop,
#    haico_site.serve, with --proxy-headers) on PORT, PORT+1, ... at
#    HAICO_BIND, each named HAICO_INSTANCE-1, -2, ... (or host/web-1, ...),
#    and stays in front of them: SIGTERM or SIGINT stops them all, and when
#    one dies the others are stopped and the script exits non-zero, so a
#    supervisor (systemd, the container runtime) restarts the whole set.
#
# Environment: the app's own settings (README "Configuration"; DEBUG is
# False here whatever the environment says), plus
#   HAICO_WEB_PROCESSES  server processes (default 2 on PostgreSQL + Redis, else 1)
#   HAICO_BIND           address they listen on (default 127.0.0.1; 0.0.0.0 in the container)
#   PYTHON               interpreter (default .venv/bin/python, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "deploy/start.sh: $*" >&2; }

port="${1:-8000}"
if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ] || [ "$#" -gt 1 ]; then
  say "usage: deploy/start.sh [PORT]  (PORT is a number from 1 to 65535; default 8000)"
  exit 2
fi

if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
export DEBUG=False
bind="${HAICO_BIND:-127.0.0.1}"

database="${DATABASE_URL:-}"
shared=0
if [[ "$database" =~ ^(postgres|postgresql|pgsql|psql)(\+[a-z]+)?:// ]] && [ -n "${REDIS_URL:-}" ]; then
  shared=1
fi
processes="${HAICO_WEB_PROCESSES:-}"
if [ -z "$processes" ]; then
  if [ "$shared" -eq 1 ]; then processes=2; else processes=1; fi
fi
if ! [[ "$processes" =~ ^[0-9]+$ ]] || [ "$processes" -lt 1 ]; then
  say "HAICO_WEB_PROCESSES is '$processes'; it must be a whole number of 1 or more."
  exit 2
fi
if [ "$processes" -gt 1 ] && [ "$shared" -eq 0 ]; then
  if [ -z "${REDIS_URL:-}" ] && ! [[ "$database" =~ ^postgres ]]; then
    what="SQLite and the in-memory channel layer"
  elif [ -z "${REDIS_URL:-}" ]; then
    what="the in-memory channel layer (REDIS_URL is not set)"
  else
    what="SQLite (DATABASE_URL is not a postgres:// URL)"
  fi
  say "refusing to start $processes server processes on $what: a turn started in one process would not stream to pages connected to another, and SQLite takes one writer at a time. Set DATABASE_URL=postgres://... and REDIS_URL=redis://..., or HAICO_WEB_PROCESSES=1."
  exit 2
fi
last_port=$((port + processes - 1))
if [ "$last_port" -gt 65535 ]; then
  say "ports $port..$last_port do not all exist; choose a lower PORT."
  exit 2
fi

# First the settings: a refusal costs nothing and changes nothing.
say "checking the deployment settings (manage.py check --deploy)"
if ! "$PYTHON" manage.py check --deploy --fail-level WARNING; then
  say "manage.py check --deploy found problems (above); fix the settings it names and start again."
  exit 1
fi
say "migrating the database"
"$PYTHON" manage.py migrate --noinput
say "collecting the static files"
"$PYTHON" manage.py collectstatic --noinput --verbosity 0

pids=()
stop_all() {
  trap - TERM INT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap 'say "stopping the server processes"; stop_all; exit 0' TERM INT

for ((i = 0; i < processes; i++)); do
  p=$((port + i))
  if [ -n "${HAICO_INSTANCE:-}" ]; then
    name="${HAICO_INSTANCE}-$((i + 1))"
  else
    name="$(hostname)/web-$((i + 1))"
  fi
  say "server process $((i + 1)) of $processes on $bind:$p (HAICO_INSTANCE=$name)"
  HAICO_INSTANCE="$name" "$PYTHON" -m haico_site.serve --proxy-headers -b "$bind" -p "$p" &
  pids+=("$!")
done

# Whichever ends first (a crash, a kill), the set goes down together.
status=0
wait -n || status=$?
say "a server process ended (status $status); stopping the others"
stop_all
exit $(( status == 0 ? 1 : status ))
