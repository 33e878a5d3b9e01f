# HAICO's server processes in a container (docs/adr/0058). The start is the
# same script `./dev prod` and the CI test run: deploy/start.sh checks the
# settings, migrates, collects the static files and starts
# HAICO_WEB_PROCESSES processes on 8000, 8001, ... (compose.yaml puts
# PostgreSQL, Redis and nginx beside it). No container engine runs where
# this was written: the image is not built by the tests (README).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHON=python3 \
    HAICO_BIND=0.0.0.0 \
    STATIC_ROOT=/app/staticfiles

# pg_dump / pg_restore for backups from inside the container (README "Backups").
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-client \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Every package at its locked version, each file checked against its hash (docs/adr/0073).
COPY requirements.lock .
RUN pip install --require-hashes -r requirements.lock

COPY . .
RUN useradd --system --home-dir /app --shell /usr/sbin/nologin haico \
    && mkdir -p /app/staticfiles /app/data \
    && chown -R haico:haico /app/staticfiles /app/data
USER haico

EXPOSE 8000 8001
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD python3 -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"

ENTRYPOINT ["deploy/start.sh"]
CMD ["8000"]
