"""The one settings module. Everything that differs per deployment is an env var."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from gripcontrol import parse_grip_uri

from agentsite import embedded
from agentsite.env import (
    check_redis_url,
    env_bool,
    env_int,
    env_list,
    env_proxy_ssl_header,
    env_rate,
    env_seconds,
    env_str,
    parse_database_url,
    redis_kwargs,
)
from observability.logs import logging_config
from observability.prices import model_prices, networks_parse

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
# Importing settings starts nothing: `make run` (agentsite.launch), manage.py and the test
# fixtures start the embedded Postgres / Redis for a missing URL and pass the URLs on.
_missing = [name for name in ("DATABASE_URL", "REDIS_URL") if not os.environ.get(name)]
if _missing:
    raise ImproperlyConfigured(
        f"{' and '.join(_missing)} not set. Set them to your Postgres / Redis, or start "
        "through `make run` or `python manage.py …`, which start the embedded servers for "
        "a missing URL (or print them: `python -m agentsite.embedded start`).")
# The all-embedded local default: the launcher sets the flag when it started both servers;
# its children inherit it with URLs that must still point at this data dir's servers.
_local_default = env_bool("AGENTSITE_EMBEDDED", False) and embedded.serves(
    os.environ["DATABASE_URL"], os.environ["REDIS_URL"])
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

DATABASE_URL = env_str("DATABASE_URL")
REDIS_URL = check_redis_url(env_str("REDIS_URL"))

DATABASES = {"default": parse_database_url(DATABASE_URL)}
# An explicit key is required unless running locally in DEBUG or on the local default.
SECRET_KEY = env_str(
    "SECRET_KEY",
    "agentsite-insecure-local-key" if (DEBUG or _local_default) else None,
)
# psycopg 3's pool via Django: a request or task borrows a connection and gives it
# back at its end, so no process holds more than DB_POOL_MAX however busy it is.
DATABASES["default"]["OPTIONS"]["pool"] = {
    "min_size": env_int("DB_POOL_MIN", 1),
    "max_size": env_int("DB_POOL_MAX", 8),
    "timeout": env_int("DB_POOL_TIMEOUT", 10),
}
# Django passes `check=ConnectionPool.check_connection` to the pool: a connection is tested
# when borrowed, so one a Postgres restart killed is replaced instead of failing a request.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# The checkpointer's own pool (execution.checkpointer) skips that test for a connection
# given back less than this long ago whose socket has nothing to read (agentsite.pool_checks).
DB_CHECK_IDLE_SECONDS = env_seconds("DB_CHECK_IDLE_SECONDS", 1.0)
# Prepared statements, with Django's and psycopg's public options: server-side binding
# (OPTIONS["server_side_binding"]: values sent apart from the SQL) lets psycopg prepare a
# statement once a connection has run it `prepare_threshold` times (Django's default,
# None, prepares nothing). DB_PREPARED_STATEMENTS=0 turns both off, as a pooler that does
# not keep a session's prepared statements needs (PgBouncer in transaction mode).
if env_bool("DB_PREPARED_STATEMENTS", True):
    DATABASES["default"]["OPTIONS"].update(server_side_binding=True, prepare_threshold=5)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "axes",  # login lockout (docs/security.md)
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_eventstream",
    "agentsite",  # infrastructure tables (idempotency keys)
    "runs",
    "hitl",
    "workspace",
    "pages",
    "lgapi",  # the LangGraph API's run webhooks (lgapi.webhook)
]

MIDDLEWARE = [
    # Django's middleware whose hooks run on the event loop under ASGI, no thread hop
    # (agentsite.loop_middleware); every one here is async-capable.
    "agentsite.loop_middleware.LoopSecurityMiddleware",
    # The request id on every log line of the request, and in its response.
    "observability.logs.RequestIdMiddleware",
    "agentsite.csp.ContentSecurityPolicyMiddleware",
    "agentsite.loop_middleware.LoopSessionMiddleware",
    "agentsite.loop_middleware.LoopCommonMiddleware",
    "agentsite.loop_middleware.LoopCsrfViewMiddleware",
    "agentsite.loop_middleware.LoopAuthenticationMiddleware",
    "agentsite.loop_middleware.LoopMessageMiddleware",
    "agentsite.loop_middleware.LoopXFrameOptionsMiddleware",
    # Pages and admin: NUL, lone surrogates, oversized fields, bad action ids -> 400.
    "agentsite.form_guard.FormGuardMiddleware",
    # Who made a change to an account (agentsite.security_audit); login lockout (axes, last).
    "agentsite.security_audit.RequestActorMiddleware",
    "axes.middleware.AxesMiddleware",
]
# Django's "not in MIDDLEWARE" checks look for its dotted names; ours subclass them
# (agentsite.loop_middleware): agentsite.checks runs them for the subclasses instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]
# django-axes first: a locked-out user or address is refused before the password is checked.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]

ROOT_URLCONF = "agentsite.urls"
ASGI_APPLICATION = "agentsite.asgi.application"

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

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / ".data" / "staticfiles"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "pages:list"
LOGOUT_REDIRECT_URL = "login"
# Content-Security-Policy (agentsite/csp.py): not on drf-spectacular's docs pages,
# which boot with an inline script.
CSP_EXEMPT_PATHS = ["/api/docs/", "/api/redoc/"]

# Plain text lines by default; LOG_FORMAT=json: one JSON object a line, each with the
# request id and run id (observability.logs).
LOG_FORMAT = env_str("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r}: use plain or json")
LOGGING = logging_config(json_lines=LOG_FORMAT == "json", level=env_str("LOG_LEVEL", "INFO"))

# --- REST --------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first so anonymous requests get 401 with WWW-Authenticate.
        "agentsite.token_auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # A token may do only what its scopes allow (agentsite.token_auth).
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated",
                                   "agentsite.token_auth.TokenScope"],
    # Per token (or user) and per address (agentsite.throttles; THROTTLE_* below).
    "DEFAULT_THROTTLE_CLASSES": ["agentsite.throttles.ApiThrottle"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "agentsite.api_errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "agentsite.pagination.Pagination",
    # JSON only, and only what Postgres and Python can hold (depth, NUL, surrogates).
    "DEFAULT_PARSER_CLASSES": ["agentsite.parsers.StrictJSONParser"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "agentsite API",
    "DESCRIPTION": "Human-in-the-loop control for LangGraph agents.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI / ReDoc assets are served from the sidecar package: the docs work offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "agentsite.api_docs.document_page_size_errors",
                             "agentsite.api_docs.document_throttling"],
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "runs.models.AgentRun.Status",
        "InterruptStatusEnum": "hitl.models.AgentInterrupt.Status",
        "ResumeStatusEnum": ["resolved", "cancelled"],
    },
}

# --- Celery ------------------------------------------------------------------
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "agentsite")
# A task is acknowledged only after it finished: a worker stopped warmly mid-run puts the
# message back for the next worker (the graph resumes from its checkpoint); one killed
# loses it, and the reaper sends the run again (below, CELERY_BROKER_TRANSPORT_OPTIONS).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Graph segments wait on Postgres, Redis and model APIs, not on the CPU: threads start a
# task ~12 ms sooner than prefork's hand-off to a child process. `prefork` still works.
CELERY_WORKER_POOL = env_str("WORKER_POOL", "threads")
if CELERY_WORKER_POOL not in ("threads", "prefork", "solo"):
    raise ImproperlyConfigured(f"WORKER_POOL must be threads, prefork or solo, got "
                               f"{CELERY_WORKER_POOL!r}")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# No Redis ack emulation (issue 37): kombu's emulation wrote every delivered message into
# an "unacked" hash and index (one MULTI pipeline on delivery, another on the ack, each on
# a new redis-py client: ~25% of the worker's CPU), so that a SIGKILLed worker's
# messages came back after `visibility_timeout`. Postgres is our record of owed work
# instead: the reaper resends every run, notification and webhook delivery owed a task
# (execution/reaper.py), a lost history repair is redone at the thread's next run, and
# beat's tasks are periodic. A warm shutdown still puts prefetched messages back on the
# queue (kombu's in-memory QoS restores them when the channel closes); what a SIGKILL
# loses, the reaper resends after REQUEUE_AFTER_SECONDS ([failure model]).
CELERY_BROKER_TRANSPORT_OPTIONS = {"ack_emulation": False}
CELERY_TASK_ALWAYS_EAGER = False
# Crash and outage recovery (execution/reaper.py, run by every worker). A running segment
# holds a lease of LEASE_SECONDS that its worker renews every third of it; a lapsed lease
# means the worker is gone, and the segment goes to another worker. A queued / resuming
# run nobody claimed for REQUEUE_AFTER_SECONDS (its task was never sent, or the broker
# lost it) is sent again. The reaper looks every SWEEP_SECONDS. Duplicate sends are
# harmless: a claim takes a segment once.
AGENTSITE_LEASE_SECONDS = env_seconds("LEASE_SECONDS", 30.0)
# How often a running segment looks whether its run was cancelled (before a graph step).
AGENTSITE_CANCEL_CHECK_SECONDS = env_seconds("CANCEL_CHECK_SECONDS", 0.2)
AGENTSITE_REQUEUE_AFTER_SECONDS = env_seconds("REQUEUE_AFTER_SECONDS", 30.0)
AGENTSITE_SWEEP_SECONDS = env_seconds("SWEEP_SECONDS", 5.0)
# A run's open stream checks the run in the database after STREAM_WATCH_SECONDS without
# an event (each further quiet spell waits twice as long, up to six times this), and sends
# the run's true state when two checks in a row disagree with what the client was told
# (its end was lost in a Redis outage). A stream held by Pushpin asks again this long
# after a first disagreeing check.
AGENTSITE_STREAM_WATCH_SECONDS = env_seconds("STREAM_WATCH_SECONDS", 5.0)
# How often an open stream checks again that its user may still read it, direct or held
# by Pushpin (its next link; an account change closes the user's streams at once anyway).
AGENTSITE_STREAM_RECHECK_SECONDS = env_seconds("STREAM_RECHECK_SECONDS", 30.0)
# Deadlines and escalation of interrupts (hitl policies): Celery beat sends the sweep
# every HITL_SWEEP_SECONDS, so an interrupt expires within that (plus one task) of its
# deadline. Beat is its own process (`celery -A agentsite beat`, started by `make run`).
HITL_SWEEP_SECONDS = env_seconds("HITL_SWEEP_SECONDS", 2.0)
# Reviewer presence (hitl.presence): an entry not renewed within this many seconds (a
# closed or killed tab) is gone; pages renew theirs every third of it.
PRESENCE_TTL_SECONDS = env_seconds("PRESENCE_TTL_SECONDS", 15.0)
# A thread's checkpoints once its run has ended (execution.checkpoint_pruning): "latest"
# keeps the latest checkpoint of each namespace (what a later run or a connect reads)
# and deletes the step-by-step history; "all" keeps everything. Swept every
# CHECKPOINT_PRUNE_SECONDS, for runs ended at least CHECKPOINT_PRUNE_AFTER_SECONDS ago.
AGENTSITE_CHECKPOINT_HISTORY = env_str("CHECKPOINT_HISTORY", "latest")
if AGENTSITE_CHECKPOINT_HISTORY not in ("latest", "all"):
    raise ImproperlyConfigured(
        f"CHECKPOINT_HISTORY must be latest or all, got {AGENTSITE_CHECKPOINT_HISTORY!r}")
CHECKPOINT_PRUNE_SECONDS = env_seconds("CHECKPOINT_PRUNE_SECONDS", 60.0)
CHECKPOINT_PRUNE_AFTER_SECONDS = env_seconds("CHECKPOINT_PRUNE_AFTER_SECONDS", 60.0)
CELERY_BEAT_SCHEDULE = {
    "hitl-deadlines": {"task": "hitl.sweep", "schedule": HITL_SWEEP_SECONDS,
                       # A sweep not started by the next one's time is dropped, not queued up.
                       "options": {"expires": HITL_SWEEP_SECONDS}},
    "checkpoints-prune": {"task": "execution.checkpoints_prune",
                          "schedule": CHECKPOINT_PRUNE_SECONDS,
                          "options": {"expires": CHECKPOINT_PRUNE_SECONDS}},
}
CELERY_BEAT_SCHEDULE_FILENAME = env_str("CELERY_BEAT_SCHEDULE_FILENAME",
                                        str(embedded.DATA_DIR / "celerybeat-schedule"))
# Task modules outside `execution.tasks` (autodiscovered): notifications and the sweep.
CELERY_INCLUDE = ["hitl.tasks", "execution.policy_tasks"]
# Webhook deliveries: attempts after the first, and the first retry's delay (doubling).
HITL_WEBHOOK_MAX_RETRIES = env_int("HITL_WEBHOOK_MAX_RETRIES", 5)
HITL_WEBHOOK_BACKOFF = env_seconds("HITL_WEBHOOK_BACKOFF", 2.0)
HITL_WEBHOOK_TIMEOUT = env_seconds("HITL_WEBHOOK_TIMEOUT", 10.0)
# Signs the POSTs to a run's own webhook (the LangGraph API's ``webhook``) as an agent
# webhook's secret signs its own; unset: they go unsigned, as LangGraph Server sends them.
RUN_WEBHOOK_SECRET = env_str("RUN_WEBHOOK_SECRET", "")

# --- Email (notifications) ---------------------------------------------------
# The console backend unless EMAIL_HOST is set: then SMTP with these settings.
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend"
                        if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend")
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "agentsite@localhost")
# Links in notifications (decide page, conversation) start with this.
AGENTSITE_BASE_URL = env_str("AGENTSITE_BASE_URL", "http://127.0.0.1:8000")

# --- Events (our Redis event store and pub/sub, streams/) ----------------------
# The pub/sub reader's connection (streams.pubsub).
EVENTSTREAM_REDIS = redis_kwargs(REDIS_URL)
# The event store (our layout, streams.keys), also as django-eventstream's storage class.
EVENTSTREAM_STORAGE_CLASS = "streams.storage.EventStore"
EVENTSTREAM_STORAGE_CONNECTION = redis_kwargs(REDIS_URL)
# Who may read which channel (run-<id>, user-<id>, reviewers).
EVENTSTREAM_CHANNELMANAGER_CLASS = "streams.channels.ChannelManager"

# --- Edge: live streams held by a GRIP proxy (Pushpin; docs/scaling.md) ------------
# GRIP_URL: the proxy's publish endpoint and the key it signs requests with, e.g.
# http://127.0.0.1:5561/?iss=pushpin&key=<sig_key>. Unset (the default): the web
# processes hold the streams themselves, as without a proxy. django-grip reads
# GRIP_PROXIES (not GRIP_URL: it would append that to GRIP_PROXIES at every request).
GRIP_PROXIES = [parse_grip_uri(env_str("GRIP_URL", ""))] if env_str("GRIP_URL", "") else []
# Pushpin's ZeroMQ publish input (its push_in_spec, e.g. tcp://127.0.0.1:5560): set, the
# edge forwarder pushes there instead of posting to GRIP_URL's endpoint (no HTTP request
# and no connection per publish: docs/scaling.md, "Latency."). Pushpin only: Fastly
# Fanout takes HTTP.
GRIP_ZMQ_PUSH_URI = env_str("GRIP_ZMQ_PUSH_URI", "")

# --- agentsite ---------------------------------------------------------------
# Modules that register agents (runs.registry); every process, web included, imports them
# once: they hold metadata only and name each graph by dotted path (agents/catalog.py).
AGENTSITE_AGENT_MODULES = env_list("AGENTSITE_AGENT_MODULES", ["agents.catalog"])
# Chat model of the agents: a LangChain init_chat_model string (openai:gpt-4o-mini,
# anthropic:…, ollama:…); empty → the built-in offline model (agents/chat_model.py).
AGENT_MODEL = env_str("AGENT_MODEL", "").strip()
# A provider call's timeout and the SDK's own quick retries (passed to the chat model).
MODEL_TIMEOUT_SECONDS = env_seconds("MODEL_TIMEOUT_SECONDS", 60.0)
MODEL_MAX_RETRIES = env_int("MODEL_MAX_RETRIES", 2)
# After those, a transient provider failure (429, 5xx, timeout, connection reset, a cut or
# malformed stream) ends the segment and the run waits ``retrying``; it goes on from its
# last checkpoint after BACKOFF, doubled each time up to BACKOFF_MAX (or the provider's
# Retry-After), at most MODEL_RUN_RETRIES times per run. Defaults: 10, 20, 40, 80, 160 s.
MODEL_RUN_RETRIES = env_int("MODEL_RUN_RETRIES", 5)
MODEL_RETRY_BACKOFF_SECONDS = env_seconds("MODEL_RETRY_BACKOFF_SECONDS", 10.0)
MODEL_RETRY_BACKOFF_MAX_SECONDS = env_seconds("MODEL_RETRY_BACKOFF_MAX_SECONDS", 300.0)
# Largest interrupt answer accepted (bytes of compact JSON); answers are copied into the
# checkpoint and the conversation's messages.
ANSWER_MAX_BYTES = env_int("ANSWER_MAX_BYTES", 256 * 1024)
# Largest value of any other field of a page or admin form (agentsite.form_guard).
FORM_FIELD_MAX_BYTES = env_int("FORM_FIELD_MAX_BYTES", 64 * 1024)
# /healthz counts queued / running / resuming runs not updated for this long as overdue.
RUN_OVERDUE_SECONDS = env_int("RUN_OVERDUE_SECONDS", 300)
# Connections the checkpointer pool may hold per process.
AGENTSITE_CHECKPOINT_POOL_MAX = env_int("CHECKPOINT_POOL_MAX", 8)
# When the worker writes checkpoints within a segment (LangGraph `durability`). After
# every step by default (LangGraph's own default): a worker lost mid-segment repeats only
# the step it was in, never model or tool calls of finished steps. "exit" writes only at
# pause / end: faster, but a lost worker repeats the whole segment.
AGENTSITE_GRAPH_DURABILITY = env_str("GRAPH_DURABILITY", "async")
if AGENTSITE_GRAPH_DURABILITY not in ("exit", "async", "sync"):
    raise ImproperlyConfigured(
        f"GRAPH_DURABILITY must be exit, async or sync, got {AGENTSITE_GRAPH_DURABILITY!r}")
# Where the LangGraph Platform API is served (lgapi/): clients use url="http://host/lg".
LANGGRAPH_API_PREFIX = env_str("LANGGRAPH_API_PREFIX", "lg/").strip("/") + "/"

# --- HTTPS (docs/security.md) ---------------------------------------------------
# The site is HTTPS when its public address is (AGENTSITE_BASE_URL): then its cookies are
# sent over HTTPS only and plain HTTP is redirected. `make run` (plain HTTP on loopback)
# keeps all of it off; docker-compose.yml, behind a TLS proxy, turns it on.
SITE_HTTPS = env_bool("SITE_HTTPS", AGENTSITE_BASE_URL.startswith("https://"))
# The header the proxy in front sets to say the client came over HTTPS: off unless set
# (a header any client could send must not count).
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", SITE_HTTPS)
# Not redirected: health probes from inside the deployment, and the live streams (a
# browser opens them from an HTTPS page; a GRIP proxy's own next-link requests to them
# come from inside too).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^api/events/$", r"^api/runs/[^/]+/events/$"]
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", SITE_HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", SITE_HTTPS)
# HSTS is opt-in: once a browser saw it, the host is HTTPS-only there for this long.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Rotation: sessions, password-reset links and signed stream links made with an old key
# stay valid while it is listed here (comma-separated).
SECRET_KEY_FALLBACKS = env_list("SECRET_KEY_FALLBACKS", [])

# --- Brute-force limits (docs/security.md) ----------------------------------------------
# How many proxies in front append to X-Forwarded-For (0: the client is REMOTE_ADDR);
# docker-compose.yml: 2 (the TLS proxy and Pushpin). agentsite.client_ip.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
# Logins (the sign-in page and the admin's), by django-axes: LOGIN_FAILURE_LIMIT failures
# in a row lock the username, and the address, out for LOGIN_LOCKOUT_SECONDS (429 with
# Retry-After); a success clears them; an admin unlocks in the admin (Axes: access
# attempts) or with `manage.py axes_reset_username NAME`.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(seconds=env_seconds("LOGIN_LOCKOUT_SECONDS", 900.0))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "agentsite.client_ip.axes_client_ip"
AXES_LOCKOUT_CALLABLE = "agentsite.throttles.login_locked_out"
AXES_VERBOSE = False
# Requests (agentsite.throttles): "N/period", the period a number of seconds or s, m, h, d
# (e.g. 600/m, 10/30s). Counted in Redis, per fixed window; over → 429 with Retry-After.
# Per API token (a browser session: per user), and per client address, over REST, AG-UI,
# the SSE streams and the LangGraph API together.
THROTTLE_TOKEN_RATE = env_rate("THROTTLE_TOKEN_RATE", "600/m")
THROTTLE_ADDRESS_RATE = env_rate("THROTTLE_ADDRESS_RATE", "1200/m")
# Failed token authentications (unknown, revoked, expired) per address.
THROTTLE_AUTH_FAILURE_RATE = env_rate("THROTTLE_AUTH_FAILURE_RATE", "30/m")
# Password-reset requests per address and per e-mail address.
THROTTLE_PASSWORD_RESET_RATE = env_rate("THROTTLE_PASSWORD_RESET_RATE", "5/h")

# --- Outbound requests (agentsite.outbound) ------------------------------------------
# Webhook URLs and model base URLs may not resolve to loopback, link-local, private or
# cloud-metadata addresses unless listed here (hosts, addresses or networks,
# comma-separated: hooks.internal, 10.1.2.3, 10.0.0.0/8, 127.0.0.1:8081).
OUTBOUND_ALLOW = env_list("OUTBOUND_ALLOW", [])

# --- Observability (docs/observability.md) ---------------------------------------------
# /metrics without a token for these addresses or networks (a Prometheus on the host).
METRICS_ALLOW = networks_parse(env_list("METRICS_ALLOW", []))
# A pending interrupt waiting longer than this is overdue (metrics and Insights).
INTERRUPT_OVERDUE_SECONDS = env_int("INTERRUPT_OVERDUE_SECONDS", 3600)
# The Insights page's price table, USD per million tokens, by model name:
# MODEL_PRICES="gpt-4o-mini=0.15/0.60,claude-sonnet-4=3/15" (input/output); others "unknown".
MODEL_PRICES = model_prices(env_list("MODEL_PRICES", []))
