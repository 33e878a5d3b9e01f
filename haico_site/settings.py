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
from django.core.exceptions import ImproperlyConfigured

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
)
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env("DEBUG")
SECRET_KEY = env("SECRET_KEY", default=DEV_SECRET_KEY)
if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured(
        "SECRET_KEY is the development default; set a long random SECRET_KEY "
        "in the environment before running with DEBUG off."
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
    "django.middleware.common.CommonMiddleware",
    # Before CSRF: it answers a body too big to read before CSRF's check
    # reads it (haico_site.middleware).
    "haico_site.middleware.HtmxErrorsMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "haico_site.middleware.AdminInputMiddleware",
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
            ],
        },
    },
]

# SQLite by default. WAL + busy_timeout + IMMEDIATE transactions keep
# concurrent turns (ORM writes and the checkpointer) from failing with
# "database is locked" (see STACK_NOTES).
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
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"].setdefault("OPTIONS", {}).update(SQLITE_OPTIONS)
    # A file-based test database so a daphne subprocess (browser tests) can
    # share it; one per pytest process so parallel runs never collide.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = env(
        "HAICO_TEST_DB_NAME", default=os.path.join(tempfile.gettempdir(), f"haico_test_db_{os.getpid()}.sqlite3")
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL")
if REDIS_URL:
    from redis.exceptions import ConnectionError as RedisConnectionError

    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        # redis-py's own default (5 s) equals the layer's
                        # blocking read (5 s): every idle socket would time
                        # out and its page be dropped (close code 1011).
                        "socket_timeout": env.float("REDIS_SOCKET_TIMEOUT", default=30.0),
                        "socket_connect_timeout": 5.0,
                        # One connection per group send in flight; the live
                        # layer keeps at most one per thread and 64 overall.
                        "max_connections": env.int("REDIS_MAX_CONNECTIONS", default=256),
                        # After Redis restarts, pooled connections are dead:
                        # one retry on a fresh connection, so the first pages
                        # reconnecting are not refused for it.
                        "retry_on_error": [RedisConnectionError],
                    }
                ],
                # Messages waiting per page; past this the layer drops them
                # (the page notices the gap and reloads what it shows).
                "capacity": env.int("CHANNEL_CAPACITY", default=1000),
                "expiry": 60,
                # Open pages renew their membership every hour (conversations.consumers).
                "group_expiry": 86400,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

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

# Login rate limit (django-axes), for the site's login and the admin's alike:
# after LOGIN_FAILURE_LIMIT wrong passwords for one username from one
# address, that pair is refused (even the right password) for
# LOGIN_COOLOFF_MINUTES, counted again from each attempt made meanwhile; a
# successful login clears the count. Other users and other addresses are
# unaffected. Behind a proxy, run daphne with --proxy-headers so the address
# is the client's, not the proxy's.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: it refuses before any password is checked
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env("LOGIN_FAILURE_LIMIT")
AXES_COOLOFF_TIME = timedelta(minutes=env("LOGIN_COOLOFF_MINUTES"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "conversations.account_views.locked_out"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "conversations:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# --- Model (DESIGN §4). Empty HAICO_MODEL means "no model configured". ---
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
# thread (agent.middleware.ContextBudgetMiddleware). Leave room for the
# system prompt, the workspace block and the reply.
HAICO_CONTEXT_TOKENS = env.int("HAICO_CONTEXT_TOKENS", default=60_000)
# Tool calls a model writes in its text (small Ollama / llama.cpp models do)
# are run as real tool calls (agent.text_calls, docs/adr/0020).
HAICO_TEXT_TOOL_CALLS = env.bool("HAICO_TEXT_TOOL_CALLS", default=True)

# A stable name for this server process (say "web-1" or "host:8000"): a
# restarted process with the same name releases the turns its predecessor
# was running at once. haico_site.serve and runserver set it from the
# address they listen on; unset, each process is unique and a dead one's
# turns are released once its claims go stale (conversations.turns.guard).
HAICO_INSTANCE = env.str("HAICO_INSTANCE", default="")

# --- Limits (documented in README) ---
HAICO_DOCUMENT_MAX_CHARS = 200_000
HAICO_MESSAGE_MAX_CHARS = 20_000
# A thread archive (conversations.archive) larger than this is refused before it is read.
HAICO_ARCHIVE_MAX_BYTES = env.int("HAICO_ARCHIVE_MAX_BYTES", default=25 * 1024 * 1024)

if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env("SECURE_SSL_REDIRECT")
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Everything goes to stderr (the server's log). With DEBUG off, Django's own
# console handler is silent and its mail_admins handler needs ADMINS, so
# without the "errors" handler a 500 left no line at all. 4xx warnings of
# django.request (every 404) stay out of a production log; security warnings
# (a refused CSRF token, a disallowed host) stay in.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"require_debug_false": {"()": "django.utils.log.RequireDebugFalse"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        # With DEBUG on, Django's console handler already prints these.
        "errors": {"class": "logging.StreamHandler", "filters": ["require_debug_false"]},
    },
    "loggers": {
        "haico": {"handlers": ["console"], "level": env("HAICO_LOG_LEVEL", default="INFO")},
        "django.request": {"handlers": ["errors"], "level": "ERROR"},
        "django.security": {"handlers": ["errors"], "level": "WARNING"},
    },
}
