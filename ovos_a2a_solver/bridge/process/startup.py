# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What a bridge process checks and prepares before it serves: settings, logging, the
listening socket, the database, the backend, and the banner.

Everything that can stop the start is checked before the persona loads, and reported as a
:class:`StartError`: one line that names the setting, port or host, and the command's exit
status (2: a setting to change, 1: the machine or the network).
"""
from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import os
import socket
import sys
import traceback
from urllib.parse import urlsplit

from ovos_a2a_solver.bridge.backends.persona_file import read_persona_file
from ovos_a2a_solver.bridge.config import (ACCESS_LOGGER, ENV_PREFIX, RESERVED_FILES, STORE_FILE_NAME, BridgeSettings,
                                           default_state_dir, names_of, open_file_limit)
from ovos_a2a_solver.bridge.storage.database_url import redact_url, sqlite_path
from ovos_a2a_solver.persona_config import PLUGIN_ID, agent_url_of

LOG = logging.getLogger("ovos_a2a_solver.bridge")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: the a2a-sdk logs request and response bodies (message text) at DEBUG under this logger
MESSAGE_LOGGER = "a2a"
DATABASE_PROBE_TIMEOUT = 10.0
SERVER_EXTRA = "pip install 'ovos-a2a-solver-plugin[server]'"
#: the a2a-sdk's own switch of its OpenTelemetry spans (read once, when the SDK is imported)
SDK_TRACING = "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"
GRPC_EXTRA = "pip install 'ovos-a2a-solver-plugin[grpc]'"
METRICS_EXTRA = "pip install 'ovos-a2a-solver-plugin[metrics]'"
#: connections the operating system keeps waiting for the bridge to accept them
LISTEN_QUEUE = 2048


class StartError(RuntimeError):
    """The bridge cannot start. ``str()`` is one line for a person; ``status`` is the exit
    status (2: change a setting, 1: a problem of the machine or the network)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# ---- logging -------------------------------------------------------------------------------------

def configure_logging(debug: bool = False) -> None:
    """Warnings only; with ``debug`` this package's DEBUG logs and other libraries' INFO.

    OVOS logs (its own handler, on stdout) are cut to errors unless ``debug`` or
    ``OVOS_DEFAULT_LOG_LEVEL`` asks otherwise: what it says while a persona loads ("padatious
    not installed", "old style entrypoint") is for developers. Call before the persona loads.
    Message text is never logged here: see :func:`log_messages`. Every record that reaches the
    log, the a2a-sdk's and uvicorn's too, is written on one line with its control characters
    escaped (``observe.log_safety``): words a caller chose cannot forge a line.
    """
    from ovos_a2a_solver.bridge.observe.log_safety import install

    logging.basicConfig(level=logging.INFO if debug else logging.WARNING, format=LOG_FORMAT, force=True)
    install(logging.getLogger().handlers)
    logging.getLogger("ovos_a2a_solver").setLevel(logging.DEBUG if debug else logging.NOTSET)
    logging.getLogger(MESSAGE_LOGGER).setLevel(logging.INFO if debug else logging.NOTSET)
    if not debug and not os.environ.get("OVOS_DEFAULT_LOG_LEVEL"):
        from ovos_utils.log import LOG as OVOS_LOG
        OVOS_LOG.set_level("ERROR")


def log_access(enabled: bool) -> None:
    """Turn on the access log (see ``edge.access_log``): a line per request, at INFO."""
    if enabled:
        logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)


def log_messages(enabled: bool) -> None:
    """Turn on the a2a-sdk's DEBUG logs, which include every request and response body."""
    if enabled:
        logging.getLogger(MESSAGE_LOGGER).setLevel(logging.DEBUG)


class StartupTrap(logging.Filter):
    """Catches uvicorn's report of a failed start (a traceback in one log record), keeps
    its last line (``Error: what happened``) in ``failure``, and drops it unless
    ``verbose``; after :meth:`release` every record passes."""

    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose
        self.active = True
        self.failure: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.active or record.levelno < logging.ERROR:
            return True
        text = record.getMessage()
        if record.exc_info:
            text = "".join(traceback.format_exception(*record.exc_info))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines and not lines[-1].startswith("Application startup failed"):
            self.failure = lines[-1]
        return self.verbose

    def release(self) -> None:
        self.active = False


# ---- checks and binding --------------------------------------------------------------------------

def bind(host: str, port: int, shared: bool = False) -> socket.socket:
    """A listening TCP socket; ``proto`` is set so that asyncio turns on TCP_NODELAY
    (without it every keep-alive response waits ~40 ms for a delayed ACK). ``shared``
    (``SO_REUSEPORT``): other such sockets of this user may bind the same port, and the
    kernel spreads new connections over them (one per worker). Raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_QUEUE)
    except BaseException:
        sock.close()
        raise
    return sock


def listen(host: str, port: int, setting: str, status: int = 1, what: str = "port",
           shared: bool = False) -> socket.socket:
    """:func:`bind`, or a :class:`StartError` with ``status`` naming the host, the port
    (``what``: "port", "gRPC port") and ``setting`` (the flag that changes it)."""
    try:
        return bind(host, port, shared)
    except socket.gaierror as exc:
        raise StartError(f"cannot listen on {host}: unknown host ({exc.strerror}); check --host", 2) from None
    except OSError as exc:
        raise StartError(bind_problem(host, port, setting, exc, what), status) from None


def bind_problem(host: str, port: int, setting: str, exc: OSError, what: str = "port") -> str:
    """One line saying why ``host``:``port`` could not be bound, and what to change."""
    if exc.errno == errno.EADDRINUSE:
        return f"{what} {port} on {host} is already in use (another bridge?): choose another with {setting}"
    if exc.errno == errno.EACCES:
        return f"no permission to listen on {what} {port} on {host} (ports below 1024 need privileges): " \
               f"choose another with {setting}"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {host}: it is not an address of this machine; check --host"
    return f"cannot listen on {host} {what} {port}: {(exc.strerror or str(exc)).lower()}"


def require_grpc() -> None:
    """Raise a :class:`StartError` (status 2) naming the fix unless gRPC can be served."""
    try:
        import grpc  # noqa: F401
        from a2a.server.request_handlers.grpc_handler import GrpcHandler  # noqa: F401
    except ImportError as exc:
        raise StartError(f"--grpc-port needs gRPC, which is not installed ({exc}): {GRPC_EXTRA}", 2) from None


def require_metrics(settings: BridgeSettings) -> None:
    """Raise a :class:`StartError` (status 2) naming the fix when ``metrics`` is on and
    ``prometheus_client`` is not installed. It is looked for, not imported: workers must
    import it only once they know to share their metrics (see ``workers``)."""
    import importlib.util

    if settings.metrics and importlib.util.find_spec("prometheus_client") is None:
        raise StartError(f"{names_of('metrics')} needs prometheus-client, which is not installed: {METRICS_EXTRA}", 2)


def grpc_port(settings: BridgeSettings) -> int | None:
    """The gRPC port to serve on (``0`` resolved to a free one), checked to be free now:
    gRPC binds inside its own server, where a port in use is a traceback, not a message."""
    if settings.grpc_port is None:
        return None
    require_grpc()
    with listen(settings.host, settings.grpc_port, names_of("grpc_port"), status=2, what="gRPC port") as probe:
        return probe.getsockname()[1]


def check_database(url: str, timeout: float = DATABASE_PROBE_TIMEOUT) -> None:
    """Connect once to a database other than SQLite; a :class:`StartError` naming its host
    and the cause if that fails within ``timeout`` seconds."""
    if sqlite_path(url) is not None:
        return
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import SQLAlchemyError

    parsed = make_url(url)
    where = f"{parsed.host}:{parsed.port}" if parsed.host and parsed.port else (parsed.host or "")
    try:
        asyncio.run(asyncio.wait_for(_connect(url), timeout))
    except (OSError, asyncio.TimeoutError) as exc:
        raise StartError(f"cannot reach the database{' at ' + where if where else ''} ({redact_url(url)}): "
                         f"{database_problem(exc, timeout)}") from None
    except SQLAlchemyError as exc:  # the driver's errors (authentication, unknown database...), wrapped
        raise StartError(f"cannot use the database{' at ' + where if where else ''} ({redact_url(url)}): "
                         f"{database_problem(exc, timeout)}") from None


async def _connect(url: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    finally:
        await engine.dispose()


def database_problem(exc: BaseException, timeout: float) -> str:
    """What went wrong with a database connection, in a few words."""
    if isinstance(exc, asyncio.TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if isinstance(exc, OSError) and (exc.errno or exc.strerror):
        return (os.strerror(exc.errno) if exc.errno else exc.strerror).lower()
    cause = getattr(exc, "orig", None) or exc
    return " ".join(str(cause).split()) or type(cause).__name__


# ---- whose store, and whom the persona relays to ----------------------------------------------------

def with_own_store(settings: BridgeSettings, configured_port: int | None = None) -> BridgeSettings:
    """``settings`` with the task store written out: this bridge's own directory (named for its
    persona and its port as configured (``configured_port``, else ``settings.port``), before a
    port 0 is resolved) unless ``--state-dir`` or ``--db`` chose one. Says where the tasks of
    earlier versions are, which all bridges kept in one file, since this bridge does not serve
    them unless told."""
    if settings.db or settings.state_dir:
        return settings
    port = settings.port if configured_port is None else configured_port
    own = dataclasses.replace(settings, port=port).own_state_dir
    earlier = default_state_dir() / STORE_FILE_NAME
    if earlier.exists() and not (own / STORE_FILE_NAME).exists():
        LOG.warning("an earlier version of the bridge kept its tasks in %s, shared by every bridge; this one keeps its "
                    "own in %s. To go on serving the earlier tasks, start it with --state-dir %s",
                    earlier, own, earlier.parent)
    return dataclasses.replace(settings, state_dir=str(own))


def claim_store(settings: BridgeSettings):
    """Take this bridge's lock on its SQLite store (held until the process ends, by every worker
    too), or raise a :class:`StartError` naming the live bridge that holds it, or saying why its
    directory will not do (another user's, or others may write to it). None on PostgreSQL,
    where the replicas check each other (see ``cluster.replicas``)."""
    from ovos_a2a_solver.bridge.storage.claim import SqliteStoreLock, StoreTaken, this_bridge
    from ovos_a2a_solver.local_state import NotPrivate

    path = sqlite_path(settings.database_url)
    if path is None:
        return None
    try:
        return SqliteStoreLock(path, this_bridge(settings.persona_name, settings.public_url)).take()
    except StoreTaken as exc:
        raise StartError(str(exc), 2) from None
    except NotPrivate as exc:
        raise StartError(f"cannot keep the task store in {path.parent}: {exc}; give the bridge a directory that "
                         f"is this user's alone with --state-dir DIR (one that does not exist yet is made so)",
                         2) from None
    except OSError as exc:
        raise StartError(f"cannot keep the task store in {path.parent}: "
                         f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}", 1) from None


def check_relay_target(settings: BridgeSettings, whole_port: bool = True) -> None:
    """Refuse a persona that relays (through the A2A plugin) to this bridge's own address: it
    would only ask itself, until its breaker gave up. ``whole_port``: every path of the port
    reaches this persona (it is served alone), not only those under its URL."""
    url = relay_agent_url(settings)
    if url is not None and is_own_address(url, settings, whole_port):
        raise StartError(f'the persona relays to this bridge\'s own address ({url}), so it would only ask itself: set '
                         f'"agent_url" in its "{PLUGIN_ID}" block to the agent it should relay to', 2)


def is_own_address(url: str, settings: BridgeSettings, whole_port: bool = True) -> bool:
    """Whether ``url`` reaches this bridge: its public URL, or its port on this machine (with
    ``whole_port`` any path there, else only its own path)."""
    own = settings.public_url
    if url.rstrip("/") == own or url.startswith(own + "/"):
        return True
    try:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return False
    local = {"127.0.0.1", "localhost", "::1", settings.host, socket.gethostname().lower()}
    if settings.host in ("0.0.0.0", "::", ""):
        local |= {"0.0.0.0", "::"}
    if port != settings.port or (parts.hostname or "").lower() not in local:
        return False
    own_path = urlsplit(own).path.rstrip("/")
    return whole_port or parts.path.rstrip("/") == own_path or parts.path.startswith(own_path + "/")


#: seconds a relaying persona's agent has, at start, to show its card
AGENT_CHECK_TIMEOUT = 5.0
#: where an agent's card is looked for under its URL (A2A 1.0 and 0.3, then agents older than 0.3)
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


def relay_agent_url(settings: BridgeSettings) -> str | None:
    """The agent a persona relays every message to (through the A2A plugin), or None."""
    if settings.backend != "persona":
        return None
    try:
        config = read_persona_file(settings.persona)
    except ValueError:
        return None  # loading the persona says why
    if PLUGIN_ID not in (config.get("handlers") or config.get("solvers") or []):
        return None
    url = agent_url_of(config.get(PLUGIN_ID))
    return url if isinstance(url, str) and url.strip() else None


def agent_card_problem(url: str, timeout: float = AGENT_CHECK_TIMEOUT) -> str | None:
    """Why no agent card can be read for ``url`` (where the A2A plugin looks for it: the URL
    itself when it ends in ``.json``, else the well-known paths under it, then under its
    origin), in a few words; None when one can."""
    import httpx

    parts = urlsplit(url)
    if parts.path.endswith(".json"):
        candidates = [url]
    else:
        bases = [url.rstrip("/")] + ([f"{parts.scheme}://{parts.netloc}"] if parts.path.strip("/") else [])
        candidates = [base + path for base in bases for path in CARD_PATHS]
    first: str | None = None
    try:
        with httpx.Client(timeout=timeout, follow_redirects=True) as http:
            for candidate in candidates:
                try:
                    response = http.get(candidate)
                except httpx.TimeoutException:
                    return f"no answer within {timeout:g} s"
                except httpx.HTTPError as exc:
                    return " ".join(str(exc).split()) or type(exc).__name__
                if response.is_success:
                    try:
                        if isinstance(response.json(), dict):
                            return None
                    except ValueError:
                        pass
                    first = first or f"what {candidate} serves is not an agent card"
                else:
                    first = first or f"no agent card there (HTTP {response.status_code} for {candidate})"
    except ValueError as exc:  # a URL that httpx cannot use
        return " ".join(str(exc).split())
    return first


def report_unreachable_agents(personas: list[BridgeSettings], timeout: float = AGENT_CHECK_TIMEOUT):
    """In a thread of its own (the bridge serves meanwhile): read the card of each relaying
    persona's agent, and log one warning for each persona whose agent shows none, since it
    would fail every message. The thread, or None when no persona relays."""
    import threading

    relays = [(each.persona_name, url) for each in personas if (url := relay_agent_url(each))]
    if not relays:
        return None

    def check() -> None:
        for name, url in relays:
            try:
                problem = agent_card_problem(url, timeout)
            except Exception as exc:  # noqa: BLE001 - a notice that cannot be made must not stop the bridge
                problem = f"{type(exc).__name__}: {exc}"
            if problem:
                LOG.warning('persona "%s" cannot reach its agent at %s (%s): its messages fail until it can; '
                            'check "agent_url" in its "%s" block', name, redact_url(url), problem, PLUGIN_ID)

    thread = threading.Thread(target=check, name="ovos-a2a-agent-check", daemon=True)
    thread.start()
    return thread


# ---- serving -------------------------------------------------------------------------------------

def load_backend(settings: BridgeSettings):
    """The backend the settings name: the persona file's persona, or the echo backend. A persona
    file that cannot be read or used is a :class:`StartError` (status 2) in one line."""
    from ovos_a2a_solver.bridge.backends.echo import EchoBackend
    from ovos_a2a_solver.bridge.backends.persona import PersonaBackend
    from ovos_a2a_solver.bridge.backends.scenarios import ScenarioBackend

    if settings.backend == "scenarios":
        return ScenarioBackend(call_log=settings.echo_log)
    if settings.backend == "echo":
        return EchoBackend(call_log=settings.echo_log)
    try:
        return PersonaBackend.from_file(settings.persona)
    except ValueError as exc:  # a persona file that cannot be read or used: its line, a setting to change
        raise StartError(" ".join(str(exc).split()), 2) from None


#: the banner's line for a bridge that asks no credentials
OPEN_WARNING = (f"  open: no credentials asked, so whoever can connect (every user of this machine) reads and changes "
                f"every task and webhook; set {ENV_PREFIX}TOKENS or {ENV_PREFIX}PASSWORD to close it")


def banner(settings: BridgeSettings, served, workers: tuple[int, ...] = ()) -> list[str]:
    """What the command prints once it serves: ``served`` is (agent name, its settings) of each
    persona, ``workers`` the workers' process ids, in order. The first line is parsed by tools
    (tests, the demo) and keeps its form: ``ovos-a2a: serving "NAME" at URL (card CARD_URL)``
    (one such line per persona)."""
    grpc = f", gRPC on port {settings.grpc_port}" if settings.grpc_port is not None else ""
    lines = [f'ovos-a2a: serving "{name}" at {each.public_url} (card {each.card_url})' for name, each in served]
    lines.append(f"  listening on {settings.host} port {settings.port}{grpc}")
    if workers:
        lines.append(f"  {len(workers)} workers, process ids {' '.join(map(str, workers))}")
    if not settings.requires_auth:
        lines.append(OPEN_WARNING)
    if len(served) == 1:
        lines.append(f"  tasks kept in {served[0][1].store}")
    else:
        lines += [f'  tasks of "{name}" kept in {each.store}' for name, each in served]
    return lines + ["  Ctrl-C to stop"]


def sdk_tracing_off_by_default(settings: BridgeSettings | None = None) -> None:
    """The a2a-sdk opens an OpenTelemetry span around every handler call whenever
    ``opentelemetry-api`` is importable (fastapi and Google's libraries bring it), even with
    no tracer configured: about a fifth of the bridge's throughput, for nothing. Off unless
    ``tracing`` is on, or the operator sets ``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=true``.
    Call before the SDK is imported."""
    if SDK_TRACING not in os.environ and "a2a.utils.telemetry" not in sys.modules:
        os.environ[SDK_TRACING] = "true" if settings is not None and settings.tracing else "false"


def check_file_limit(settings: BridgeSettings) -> None:
    """Warn when ``max_connections`` leaves too few of the open-file limit for the rest:
    beyond it, connections fail with "too many open files" instead of being refused."""
    endpoints = 2 if settings.grpc_port is not None else 1
    files = open_file_limit()
    needed = settings.connection_limit * endpoints + RESERVED_FILES
    if needed > files:
        LOG.warning("%s %d on %d port(s) needs about %d open files, and this process may open %d (ulimit -n): "
                    "connections beyond that fail with 'too many open files' instead of being refused; lower "
                    "it or raise the limit", names_of("max_connections"), settings.connection_limit, endpoints,
                    needed, files)
