"""HAICO settings, read from the environment (django-environ).

With no environment at all the development defaults apply: DEBUG on, a
SQLite file next to manage.py, the in-memory channel layer and no model.
Production (DEBUG off) refuses to start with the development secret.
"""

import os
import tempfile
from datetime import timedelta
from pathlib import Path

import environ
import redis
from django.core.exceptions import ImproperlyConfigured
from redis.driver_info import DriverInfo
from redis.exceptions import ConnectionError as RedisConnectionError

BASE_DIR = Path(__file__).resolve().parent.parent

DEV_SECRET_KEY = "haico-insecure-development-key-do-not-use-in-production"

env = environ.Env(
    DEBUG=(bool, True),
    ALLOWED_HOSTS=(list, ["127.0.0.1", "localhost", "[::1]"]),
    CSRF_TRUSTED_ORIGINS=(list, []),
    REDIS_URL=(str, ""),
    OPENAI_API_KEY=(str, ""),
    OPENAI_BASE_URL=(str, ""),
    HAICO_MODEL=(str, ""),
    HAICO_MODELS=(list, []),
    HAICO_MODEL_TIMEOUT=(float, 60.0),
    HAICO_MODEL_MAX_RETRIES=(int, 3),
    HAICO_MODEL_MAX_TOKENS=(int, 4096),
    HAICO_MODEL_CALL_LIMIT=(int, 25),
    HAICO_EXPLORE_CALL_LIMIT=(int, 10),
    HAICO_PLAN_CALL_LIMIT=(int, 10),
    SECURE_SSL_REDIRECT=(bool, True),
    LOGIN_FAILURE_LIMIT=(int, 5),
    LOGIN_COOLOFF_MINUTES=(int, 15),
    HAICO_SIGNUP=(str, "open"),
    HAICO_SIGNUP_APPROVAL=(bool, False),
    HAICO_INVITE_DAYS=(int, 7),
    HAICO_DAILY_TOKEN_LIMIT=(int, 0),
    HAICO_MONTHLY_TOKEN_LIMIT=(int, 0),
)
if (BASE_DIR / ".env").exists():
    # Only then: django-environ logs a missing file, before the log's format is set.
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env("DEBUG")
SECRET_KEY = env("SECRET_KEY", default=DEV_SECRET_KEY)
if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY is the development default; set a long random SECRET_KEY in the environment before running with DEBUG off."
    )

ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "django_htmx",
    "template_partials",
    "channels",
    "conversations",
    "workspace",
    "agent",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # A page read whose database connection closed under it (a failover) is
    # read again on a new one, the session's and the person's reads by the
    # middlewares below included (haico_site.middleware).
    "haico_site.middleware.LostConnectionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Before CSRF: it answers a body too big to read before CSRF's check
    # reads it (haico_site.middleware).
    "haico_site.middleware.HtmxErrorsMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A page's request is done as the person the page is for, or not at all
    # (docs/adr/0108); before anything that answers for the signed-in person.
    "haico_site.middleware.PagePersonMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "haico_site.middleware.AdminInputMiddleware",
    # Sign-up, password reset and login limits per address (docs/adr/0051).
    "haico_site.middleware.AccessLimitsMiddleware",
    # A signed-in person's pages are never stored by a browser or proxy cache.
    "haico_site.middleware.PrivatePagesMiddleware",
    # After authentication: an account waiting for staff approval reaches
    # only the waiting page, logging out and its password (docs/adr/0061).
    "conversations.approval.ApprovalGateMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a lockout into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "haico_site.urls"
# A stale tab's htmx post gets a message, not the 403 page (haico_site.views).
CSRF_FAILURE_VIEW = "haico_site.views.csrf_failure"
ASGI_APPLICATION = "haico_site.asgi.application"
WSGI_APPLICATION = "haico_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "conversations.approval.signup_links",
            ],
        },
    },
]

# SQLite by default. WAL + busy_timeout + IMMEDIATE transactions keep
# concurrent turns (ORM writes and the checkpointer) from failing with
# "database is locked", as a few did with SQLite's defaults.
SQLITE_OPTIONS = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
}
DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
# Keep connections open between requests and agent steps: each
# database_sync_to_async call runs close_old_connections, and with a max age
# of 0 every turn step would reconnect (and, on SQLite, re-run its pragmas).
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's, checking a reused connection by its socket before a round trip (docs/adr/0170).
    DATABASES["default"]["ENGINE"] = "haico_site.postgresql"
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
    # A file-based test database so a daphne subprocess (browser tests) can
    # share it; one per pytest process so parallel runs never collide.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = env(
        "HAICO_TEST_DB_NAME", default=os.path.join(tempfile.gettempdir(), f"haico_test_db_{os.getpid()}.sqlite3")
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL")
# How redis-py names itself to Redis (CLIENT SETINFO), given here: left out,
# every new connection looks its version up in the installed packages'
# metadata, 3-4 ms of the interpreter each, and Django's cache opens
# connections for every request and page (docs/adr/0097).
REDIS_DRIVER_INFO = DriverInfo(lib_version=redis.__version__)
# How the channel layer connects to Redis (redis-py connection options).
REDIS_HOST_OPTIONS = {
    # redis-py's own default (5 s) equals the layer's blocking read (5 s):
    # every idle socket would time out and its page be dropped (close code 1011).
    "socket_timeout": env.float("REDIS_SOCKET_TIMEOUT", default=30.0),
    "socket_connect_timeout": 5.0,
    # One connection per group send in flight; the live layer keeps at most
    # one per thread and 64 overall.
    "max_connections": env.int("REDIS_MAX_CONNECTIONS", default=256),
    # A pooled connection Redis closed (a restart, a failover) fails its next
    # command: it is tried once more on a new connection (docs/adr/0044).
    "retry_on_error": [RedisConnectionError],
    "driver_info": REDIS_DRIVER_INFO,
}
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, **REDIS_HOST_OPTIONS}],
                # Messages waiting per server process (its channels share one
                # Redis key); past this the layer drops them (a page notices
                # the gap and reloads what it shows).
                "capacity": env.int("CHANNEL_CAPACITY", default=1000),
                "expiry": 60,
                # Memberships are renewed every hour: a thread's by the
                # process's relay (conversations.live), a session's by its pages.
                "group_expiry": 86400,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The cache holds the rate limits' counts (conversations.ratelimit,
# docs/adr/0051): in Redis when REDIS_URL is set, so every server process
# counts together; otherwise in this process's memory, which is right for
# the one process the SQLite default runs.
REDIS_CACHE_OPTIONS = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0, "driver_info": REDIS_DRIVER_INFO}
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # Installs (or test runs) sharing one Redis keep their counts apart.
            "KEY_PREFIX": env.str("HAICO_CACHE_KEY_PREFIX", default="haico"),
            "OPTIONS": REDIS_CACHE_OPTIONS,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "haico"}}

# Password-reset mail. The console backend by default, so a reset request
# never fails for want of a mail server; set EMAIL_URL (e.g.
# smtp+tls://user:password@smtp.example.com:587) to really send it.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="HAICO <noreply@localhost>")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Django's database sessions; a session whose key changes (a password
# change) takes its open sockets along (conversations.sessions).
SESSION_ENGINE = "conversations.sessions"

# Login rate limit (django-axes), for the site's login and the admin's alike
# (docs/adr/0051): after LOGIN_FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is refused (even the right password)
# for LOGIN_COOLOFF_MINUTES from when it was locked; attempts meanwhile do
# not lengthen it. A successful login clears the count, and so does a
# password reset (for that username from every address). A browser that
# has logged in as that person before is never locked out by someone
# else's failures (conversations.login_limits), so a shared address (NAT, a
# proxy) cannot keep its owner out. Behind a proxy, run daphne with
# --proxy-headers so the address is the client's, not the proxy's.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: it refuses before any password is checked
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env("LOGIN_FAILURE_LIMIT")
AXES_COOLOFF_TIME = timedelta(minutes=env("LOGIN_COOLOFF_MINUTES"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "conversations.account_views.locked_out"
AXES_WHITELIST_CALLABLE = "conversations.login_limits.is_known_browser"

# Rate limits ("N/period", e.g. 10/hour or 5/15min; "off" for none), per
# connecting address unless said otherwise (conversations.ratelimit,
# docs/adr/0051). Documented in README's configuration table.
HAICO_RATE_SIGNUP = env.str("HAICO_RATE_SIGNUP", default="10/hour")
HAICO_RATE_PASSWORD_RESET = env.str("HAICO_RATE_PASSWORD_RESET", default="10/hour")
HAICO_RATE_RESET_MAIL = env.str("HAICO_RATE_RESET_MAIL", default="3/hour")  # per account
HAICO_RATE_LOGIN_FAILURES = env.str("HAICO_RATE_LOGIN_FAILURES", default="30/hour")  # for any usernames
HAICO_RATE_MCP_AUTH_FAILURES = env.str("HAICO_RATE_MCP_AUTH_FAILURES", default="20/minute")
# Per person: names looked up in the Share dialog that are not an exact
# username (an email, mostly), docs/adr/0137.
HAICO_RATE_SHARE_LOOKUPS = env.str("HAICO_RATE_SHARE_LOOKUPS", default="30/day")
# Per person, at once (0: no limit): turns running in their threads, counted
# from the database (conversations.turns.slot), and open thread pages
# (their sockets).
HAICO_MAX_RUNNING_TURNS = env.int("HAICO_MAX_RUNNING_TURNS", default=5)
HAICO_MAX_OPEN_PAGES = env.int("HAICO_MAX_OPEN_PAGES", default=30)

# Who may make an account (docs/adr/0061): "open" (anyone, the development
# default), "invite" (only with an invite link staff made in the admin) or
# "closed" (staff make accounts in the admin). With HAICO_SIGNUP_APPROVAL a
# new account waits for staff approval before it can use anything.
HAICO_SIGNUP = env("HAICO_SIGNUP").strip().lower()
if HAICO_SIGNUP not in ("open", "invite", "closed"):
    raise ImproperlyConfigured(f"HAICO_SIGNUP must be open, invite or closed, not {HAICO_SIGNUP!r}.")
HAICO_SIGNUP_APPROVAL = env("HAICO_SIGNUP_APPROVAL")
# How long an invite link stays valid unless staff choose otherwise.
HAICO_INVITE_DAYS = env("HAICO_INVITE_DAYS")

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "conversations:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# STATIC_ROOT and STORAGES: "Production serving" below.

# --- Model (docs/adr/0062, 0072). Empty HAICO_MODEL means "no model configured". ---
OPENAI_API_KEY = env("OPENAI_API_KEY")
OPENAI_BASE_URL = env("OPENAI_BASE_URL")
HAICO_MODEL = env("HAICO_MODEL")
HAICO_MODELS = [m for m in env("HAICO_MODELS") if m] or ([HAICO_MODEL] if HAICO_MODEL else [])
if HAICO_MODEL and HAICO_MODEL not in HAICO_MODELS:
    HAICO_MODELS.insert(0, HAICO_MODEL)
HAICO_MODEL_TIMEOUT = env("HAICO_MODEL_TIMEOUT")
HAICO_MODEL_MAX_RETRIES = env("HAICO_MODEL_MAX_RETRIES")
HAICO_MODEL_MAX_TOKENS = env("HAICO_MODEL_MAX_TOKENS")
# Model calls allowed in one turn, so a model that keeps calling tools cannot loop forever.
HAICO_MODEL_CALL_LIMIT = env("HAICO_MODEL_CALL_LIMIT")
# The same in the Explore and Plan modes (HAICO_MODEL_CALL_LIMIT is Execute's;
# 0: no limit), docs/adr/0018.
HAICO_EXPLORE_CALL_LIMIT = env("HAICO_EXPLORE_CALL_LIMIT")
HAICO_PLAN_CALL_LIMIT = env("HAICO_PLAN_CALL_LIMIT")
# The most the history sent with one model call may take, in (approximate)
# tokens; older turns beyond it are left out of that call, never out of the
# thread (agent.model_input.ModelInputMiddleware). Leave room for the
# system prompt, the workspace block and the reply.
HAICO_CONTEXT_TOKENS = env.int("HAICO_CONTEXT_TOKENS", default=60_000)
# Tool calls a model writes in its text (small Ollama / llama.cpp models do)
# are run as real tool calls (agent.text_calls, docs/adr/0020).
HAICO_TEXT_TOOL_CALLS = env.bool("HAICO_TEXT_TOOL_CALLS", default=True)

# A stable name for this server process (say "web-1" or "host:8000"): a
# restarted process with the same name releases the turns its predecessor
# was running at once. haico_site.serve and runserver set it from the
# address they listen on; unset, each process is unique and a dead one's
# turns are released once its claims go stale (conversations.turns.slot).
HAICO_INSTANCE = env.str("HAICO_INSTANCE", default="")

# Tokens (input + output, as the provider reports them) one person may use
# per UTC day and per UTC month, 0 for no limit; staff override them per
# person in the admin (conversations.quotas, docs/adr/0064).
HAICO_DAILY_TOKEN_LIMIT = env("HAICO_DAILY_TOKEN_LIMIT")
HAICO_MONTHLY_TOKEN_LIMIT = env("HAICO_MONTHLY_TOKEN_LIMIT")

# --- Limits (documented in README) ---
HAICO_DOCUMENT_MAX_CHARS = 200_000
HAICO_MESSAGE_MAX_CHARS = 20_000
# The most one answer of the agent may hold: a model that goes on past it is
# stopped there, and the answer ends with a note saying it was cut
# (agent.answer_cap, docs/adr/0043).
HAICO_ANSWER_MAX_CHARS = env.int("HAICO_ANSWER_MAX_CHARS", default=200_000)
# How old a half-made branch or a checkpointer history without its thread
# (an import or a fork its server died in) must be before the cleanup every
# server runs removes it (conversations.branch_cleanup, docs/adr/0045).
HAICO_ABANDONED_AFTER_SECONDS = env.int("HAICO_ABANDONED_AFTER_SECONDS", default=300)
# Test-only: the name of a crash point (conversations.faults) at which this
# process kills itself, as a crash would. Empty (always, outside tests): none.
HAICO_CRASH_AT = env.str("HAICO_CRASH_AT", default="")
# A thread archive (conversations.archive) larger than this is refused before it is read.
HAICO_ARCHIVE_MAX_BYTES = env.int("HAICO_ARCHIVE_MAX_BYTES", default=25 * 1024 * 1024)
# An xz-compressed archive (a long thread's: docs/adr/0100) is refused when its
# JSON unpacks to more than this, which bounds what one upload can make the
# server hold and parse.
HAICO_ARCHIVE_MAX_UNPACKED_BYTES = env.int("HAICO_ARCHIVE_MAX_UNPACKED_BYTES", default=256 * 1024 * 1024)

# HSTS, production only (docs/adr/0051): a year, the age browsers and the
# preload list expect of a site that is HTTPS for good (as one with
# SECURE_SSL_REDIRECT is), this host's subdomains included. Joining the
# browsers' preload list cannot be undone quickly, so it is asked for only
# with HAICO_HSTS_PRELOAD=1 (the list needs a year and the subdomains).
HSTS_YEAR = 31_536_000
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env("SECURE_SSL_REDIRECT")
    SECURE_HSTS_SECONDS = env.int("HAICO_HSTS_SECONDS", default=HSTS_YEAR)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("HAICO_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("HAICO_HSTS_PRELOAD", default=False)
    if SECURE_HSTS_PRELOAD and (SECURE_HSTS_SECONDS < HSTS_YEAR or not SECURE_HSTS_INCLUDE_SUBDOMAINS):
        raise ImproperlyConfigured(
            "HAICO_HSTS_PRELOAD=1 needs HAICO_HSTS_SECONDS of at least 31536000 (a year) and "
            "HAICO_HSTS_INCLUDE_SUBDOMAINS on: the browsers' preload list refuses less."
        )
    if not SECURE_HSTS_PRELOAD:
        # check --deploy suggests preloading; here it is a choice left off on purpose.
        SILENCED_SYSTEM_CHECKS = [*globals().get("SILENCED_SYSTEM_CHECKS", []), "security.W021"]
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Logging (docs/adr/0060) ---
# Everything goes to stderr (the server's log), every line with its time,
# level, logger and message; HAICO_LOG_FORMAT=json writes one JSON object a
# line instead, with the thread and turn on the lines a turn writes
# (haico_site.logs). The root logger carries the one handler, so daphne's
# own lines, its access log (haico_site.serve) and uncaught exceptions come
# out the same way. With DEBUG off Django's own console handler is silent:
# errors and security refusals reach the log through the root. 4xx
# warnings of django.request (every 404) stay out of a production log;
# security warnings (a refused CSRF token, a disallowed host) stay in.
HAICO_LOG_FORMAT = env.str("HAICO_LOG_FORMAT", default="text")
if HAICO_LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"HAICO_LOG_FORMAT is {HAICO_LOG_FORMAT!r}; use text or json.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "turn": {"()": "haico_site.logs.TurnFilter"},
        # A model provider's API key never reaches the log (docs/adr/0062).
        "redact_secrets": {"()": "agent.secrets.RedactSecrets"},
        "sockets_closed_for_outage": {"()": "haico_site.logs.DropSocketsClosedForOutage"},
        "database_outage_as_line": {"()": "haico_site.logs.DatabaseOutageAsLine"},
    },
    "formatters": {
        "text": {"()": "haico_site.logs.TextFormatter"},
        "json": {"()": "haico_site.logs.JsonFormatter"},
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "formatter": HAICO_LOG_FORMAT, "filters": ["turn", "redact_secrets"]},
    },
    # Libraries' own INFO lines (every HTTP request of the model client) stay out.
    "root": {"handlers": ["stderr"], "level": "WARNING"},
    "loggers": {
        "haico": {"level": env("HAICO_LOG_LEVEL", default="INFO")},
        # Django's own handlers off: its lines go through the root's, once.
        "django": {"handlers": [], "level": "INFO"},
        # In development every 404 is worth a line; in production only errors.
        "django.request": {"level": "WARNING" if DEBUG else "ERROR", "filters": ["database_outage_as_line"]},
        "django.security": {"level": "WARNING"},
        "daphne": {"level": "INFO"},
        "daphne.server": {"filters": ["sockets_closed_for_outage"]},
    },
}

# --- Production serving (docs/adr/0058) ---
# The app serves its own static files in production (ServeStatic, before
# everything else: no session or database for a CSS file), so a page works
# behind any proxy or none. With DEBUG off, `collectstatic` (deploy/start.sh
# runs it) writes hashed, gzip- and brotli-compressed copies to STATIC_ROOT,
# and the pages name the hashed files, which are cached for ten years. With
# DEBUG on nothing changes: runserver serves static/ as it is.
STATIC_ROOT = env.path("STATIC_ROOT", default=BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "servestatic.storage.CompressedManifestStaticFilesStorage"
    },
}
# The pages name only the hashed files; compressing the plain copies too
# would double collectstatic's work for files nothing asks for.
SERVESTATIC_KEEP_ONLY_HASHED_FILES = True
if not DEBUG:
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
        "servestatic.middleware.ServeStaticMiddleware",
    )
# A load balancer's plain-HTTP probe gets its answer, not a redirect (haico_site.health).
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
if not DEBUG and not env("SECURE_SSL_REDIRECT"):
    # The operator said the proxy redirects to HTTPS: `check --deploy`
    # (deploy/start.sh fails on its warnings) need not say so again.
    SILENCED_SYSTEM_CHECKS = [*globals().get("SILENCED_SYSTEM_CHECKS", []), "security.W008"]

# --- Content-Security-Policy (docs/adr/0059) ---
# On every response (haico_site.csp): the site's own scripts, styles,
# images and connections only (connect-src 'self' covers the page's ws:/wss:
# socket to the same host), no inline <script> or <style>; style attributes
# stay allowed (the trajectory map places its nodes with them, a markdown
# table aligns its columns with them). data: and blob: images: a chart's PNG
# export. Violations are reported to /csp-report/ and logged.
SECURE_CSP = {
    "default-src": ["'self'"],
    # 'report-sample': a report quotes the start of what was refused.
    "script-src": ["'self'", "'report-sample'"],
    "style-src": ["'self'", "'report-sample'"],
    "style-src-attr": ["'unsafe-inline'"],
    "img-src": ["'self'", "data:", "blob:"],
    "font-src": ["'self'"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "frame-ancestors": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "report-uri": ["/csp-report/"],
}
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1, "haico_site.csp.ContentSecurityPolicyMiddleware"
)
