# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's settings: every knob typed, defaulted, bounded and described here and nowhere else.

Each field of :class:`BridgeSettings` carries a :class:`~ovos_a2a_solver.setting_specs.Spec`
(help text, bounds, whether it has a flag), declared as every setting of the package is
(:mod:`~ovos_a2a_solver.setting_specs`). From it come the ``serve`` command's flags and help (:func:`add_flags`) and the
docs/bridge.md's settings table (:func:`settings_table`), so a default or a bound is written once.

Values come from command-line flags, then ``OVOS_A2A_*`` environment variables, then the
settings file (``--config``), then defaults. A flag out of range is a usage error (argparse
checks it with :func:`flag_type`); an environment number out of range is clamped and a
malformed one replaced by its default, each with a warning naming the variable, so a bad
deployment setting never stops the bridge. The settings file is JSON, so its values are
type-checked: a value of the wrong type is a :class:`SettingsError` naming the key. What
cannot be repaired (a base URL that is not http(s), an in-memory or unknown database,
listening beyond loopback without credentials) raises :class:`SettingsError` too.

A secret (a password, tokens, a database URL with a password: see ``Spec.secret``) is
never needed on a command line, where every user of the machine reads it (``ps``): it
comes from the environment, from a file only its owner may read (``--password-file``,
``OVOS_A2A_PASSWORD_FILE``...) or from the settings file, which is then refused while
others may read it. Its flag still works, with a warning that says where to put it.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import ipaddress
import logging
import os
import re
import socket
import sys
from dataclasses import Field, dataclass, fields
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from ovos_a2a_solver.bridge.backends.persona_file import persona_file_name
from ovos_a2a_solver.bridge.storage.database_url import (POSTGRES_HINT, check_database_url, has_password, redact_url,
                                                         sqlite_path)
from ovos_a2a_solver.local_state import package_state_dir
from ovos_a2a_solver.setting_specs import (bounds_text, default_cell, markdown_table, number_text, setting, spec_of,
                                           yes_or_no)

LOG = logging.getLogger("ovos_a2a_solver.bridge")

ENV_PREFIX = "OVOS_A2A_"
#: failed turns in a row after which the backend gets a rest of ``backend_cool_down`` seconds
BACKEND_FAILURES_BEFORE_REST = 3
#: the logger of the access log (``edge.access_log``), turned on by ``access_log``
ACCESS_LOGGER = "ovos_a2a_solver.bridge.access"
#: the SQLite task store's file in its ``state_dir``
STORE_FILE_NAME = "bridge.sqlite3"
#: the card's paths, at the root and under the endpoint's path; public, like the key set
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
#: the public keys of the card's signature (a JWK Set), next to the card
JWKS_PATH = "/.well-known/jwks.json"
#: the media types a message's parts may have (the card's ``defaultInputModes``): a persona is asked in words
INPUT_MODES = ("text/plain",)
#: open files a bridge process keeps for other things than its callers' connections: the
#: database, the persona, logs, outgoing webhooks (default of ``max_connections``)
RESERVED_FILES = 64
#: the most connections a process may be allowed (also the open-file limit taken for "unlimited")
MOST_CONNECTIONS = 1_000_000


class SettingsError(ValueError):
    """A setting that cannot be used or repaired. ``str()`` is one line naming the setting."""


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/ovos_a2a_solver/bridge``: each bridge's own store is a directory in it
    (see :attr:`BridgeSettings.own_state_dir`)."""
    return package_state_dir() / "bridge"


def directory_name(text: str) -> str:
    """``text`` as a portable directory name: lower case letters, digits and dashes."""
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())) or "persona"


@dataclass(frozen=True)
class BridgeSettings:
    """How the bridge runs (``ovos-a2a serve --help``, the README's bridge settings table).

    Constructing one checks what cannot be repaired (``base_url``, ``db``) and raises
    :class:`SettingsError`; :meth:`load` also converts and bounds raw values.
    """

    config: str | None = setting(None, metavar="FILE.json",
                                 help="a JSON object of settings named as here, e.g. {\"port\": 8338, \"max_concurrent\": "
                                      "4}; flags and the environment win over it")
    persona: str | None = setting(None, help="the persona JSON file", metavar="FILE.json",
                                  shown="the embedded offline persona")
    personas_dir: str | None = setting(None, metavar="DIR",
                                       help="serve every persona file (*.json) in DIR, each at BASE_URL/NAME with "
                                            "its own card, memory and tasks (instead of --persona)")
    host: str = setting("127.0.0.1", help="address to listen on")
    port: int = setting(8337, kind=int, bounds=(0, 65535), help="port to listen on (0: any free port)")
    base_url: str | None = setting(None, metavar="URL", shown="http://HOST:PORT/a2a",
                                   help="public URL of the A2A endpoint, written on the card "
                                        "(behind a proxy: https://…)")
    state_dir: str | None = setting(None, metavar="DIR", shown="$XDG_STATE_HOME/ovos_a2a_solver/bridge/PERSONA-PORT",
                                    help="directory of the SQLite task store; by default each bridge has its own, "
                                         "named for its persona and port")
    db: str | None = setting(None, secret=has_password, metavar="URL",
                             help=f"PostgreSQL database of the task store instead of SQLite, shared by every "
                                  f"replica ({POSTGRES_HINT})")
    name: str | None = setting(None, shown="the persona's", help="agent name on the card")
    description: str | None = setting(None, shown="the persona's", help="agent description on the card")
    card_signing_key: str | None = setting(None, metavar="FILE",
                                           help="private key (PEM or JWK; EC P-256/P-384/P-521, RSA, Ed25519) "
                                                "that signs the card (JWS, A2A 1.0 §8.4); its public key is "
                                                "served at .well-known/jwks.json, named in the signature's jku")
    heartbeat: float = setting(15.0, kind=float, bounds=(1, 300),
                               help="seconds of silence before a 'still working' heartbeat")
    relay_progress: bool = setting(True, kind=bool,
                                   help="with a relay persona: forward the remote agent's progress notes "
                                        "('Searching flights…') to streaming and polling callers as 'working' "
                                        "status updates, the note in their metadata (at most one a second)")
    deadline: float = setting(3600.0, kind=float, bounds=(1, 86400),
                              help="seconds one message may work before its outcome is 'unknown'")
    cancel_grace: float = setting(2.0, kind=float, bounds=(0.1, 60), flag=False,
                                  help="seconds a cancel waits for the persona to stop")
    shutdown_grace: float = setting(3.0, kind=float, bounds=(0, 300),
                                    help="seconds running turns get to finish on SIGTERM or Ctrl-C; then they "
                                         "end 'failed'")
    max_concurrent: int = setting(8, kind=int, bounds=(1, 10000),
                                  help="messages worked on at once before 'busy'")
    workers: int = setting(1, kind=int, bounds=(1, 64),
                           help="processes serving the same port and store, each with its own persona (on "
                                "SQLite: Linux only); a worker that dies is started again")
    max_body: int = setting(1024 * 1024, kind=int, bounds=(1024, 64 * 1024 * 1024), flag=False,
                            help="largest request body, bytes")
    max_parts: int = setting(100, kind=int, bounds=(1, 10000), flag=False, help="parts one message may have")
    max_values: int = setting(1000, kind=int, bounds=(100, 1_000_000), flag=False,
                              help="JSON values one request may hold (objects, arrays, strings, numbers, ...; "
                                   "over gRPC: message fields and elements)")
    max_connections: int | None = setting(None, kind=int, bounds=(1, MOST_CONNECTIONS),
                                          shown="from the open-file limit",
                                          help="connections open at once per process, on the HTTP port and on the "
                                               "gRPC port each; a new one at the limit takes the place of the one "
                                               "waiting longest for its request, or is answered HTTP 503 and closed "
                                               "if every one has a request in progress (gRPC: closed). Default: "
                                               f"(ulimit -n - {RESERVED_FILES}) / 2, or / 3 with gRPC")
    max_streams_per_caller: int | None = setting(None, kind=int, bounds=(1, MOST_CONNECTIONS),
                                                 shown="a quarter of max-connections",
                                                 help="streams (SendStreamingMessage, SubscribeToTask) one caller "
                                                      "may have open at once per process, on the HTTP port and on "
                                                      "the gRPC port each; past it, the caller's new stream is "
                                                      "answered HTTP 429 with Retry-After (gRPC: "
                                                      "RESOURCE_EXHAUSTED). A caller is the authenticated user "
                                                      "with credentials, else the client's IP address")
    header_timeout: float = setting(10.0, kind=float, bounds=(0.1, 600), flag=False,
                                    help="seconds a request's line and headers may take to arrive, from the "
                                         "connection's opening or its previous response (gRPC: the connection's "
                                         "handshake); then HTTP 408 and the connection is closed")
    body_timeout: float = setting(30.0, kind=float, bounds=(0.1, 3600), flag=False,
                                  help="seconds a request's body may take to arrive after its headers; then HTTP "
                                       "408 and the connection is closed (responses and streams are not timed)")
    idle_timeout: float = setting(5.0, kind=float, bounds=(0.1, 3600), flag=False,
                                  help="seconds a connection without a request in progress stays open (HTTP "
                                       "keep-alive; gRPC: then GOAWAY, and the client reconnects)")
    backend_retries: int = setting(2, kind=int, bounds=(0, 10), flag=False,
                                   help="more tries for a turn that fails before it said anything")
    backend_cool_down: float = setting(30.0, kind=float, bounds=(1, 3600), flag=False,
                                       help="seconds every message is answered 'failed' at once after "
                                            f"{BACKEND_FAILURES_BEFORE_REST} failed turns in a row")
    username: str = setting("a2a", help="HTTP Basic user name")
    password: str | None = setting(None, secret=True, help="HTTP Basic password")
    tokens: tuple[str, ...] = setting((), kind=tuple, flag=False, secret=True,
                                      help="accepted Bearer tokens, comma separated")
    push_allow: tuple[str, ...] = setting((), kind=tuple, flag=False,
                                          help="webhook hosts, addresses or networks allowed although private or "
                                               "loopback (e.g. 127.0.0.1,10.0.0.0/8), comma separated")
    push_configs_per_task: int = setting(10, kind=int, bounds=(1, 1000), flag=False,
                                         help="webhooks (push configs) one task may have; one more is refused "
                                              "(-32602, HTTP 400, gRPC INVALID_ARGUMENT) naming this setting")
    push_configs_per_owner: int = setting(100, kind=int, bounds=(1, 100000), flag=False,
                                          help="webhooks one caller may have on its unfinished tasks (per tenant; "
                                               "those of finished tasks do not count); one more is refused "
                                               "likewise")
    push_config_size: int = setting(4096, kind=int, bounds=(256, 65536), flag=False,
                                    help="largest push config (its JSON: URL, token, credentials), bytes; a "
                                         "larger one is refused likewise")
    push_in_flight: int = setting(32, kind=int, bounds=(1, 1000), flag=False,
                                  help="webhook deliveries in flight at once; more wait their turn (in order per "
                                       "webhook)")
    push_in_flight_per_caller: int = setting(8, kind=int, bounds=(1, 1000), flag=False,
                                             help="of those, deliveries in flight for one caller's webhooks (so one "
                                                  "caller's slow webhooks never hold up another's)")
    push_in_flight_per_host: int = setting(4, kind=int, bounds=(1, 1000), flag=False,
                                           help="of those, deliveries in flight to one webhook host and port for "
                                                "one caller")
    push_timeout: float = setting(15.0, kind=float, bounds=(1, 120), flag=False,
                                  help="seconds one delivery may take, connecting and answering included (past "
                                       "it, it is tried again); only the status and the first 4 KiB of the answer "
                                       "are read")
    grpc_port: int | None = setting(None, kind=int, bounds=(0, 65535), shown="off",
                                    help="also serve gRPC on this port (0: any free port; needs the grpc extra; "
                                         "not with credentials)")
    grpc_unlisted: bool = setting(False, kind=bool,
                                  help="serve gRPC without naming it in the card, whose other interfaces are all "
                                       "on its own scheme, host and port: what clients that accept no other card "
                                       "(Google ADK's RemoteA2aAgent) need; gRPC callers are given its address "
                                       "(HOST:PORT) another way")
    replica: str = setting(default_factory=socket.gethostname, flag=False, shown="host name",
                           help="this process's name in a shared database (a worker's: NAME#N)")
    replica_lease: float = setting(15.0, kind=float, bounds=(1, 600), flag=False,
                                   help="with PostgreSQL: seconds a replica's lease lasts unrenewed (it renews every "
                                        "third of it); past it, another replica fails the tasks it was working on. "
                                        "Also how often tasks left working with nobody working on them are failed")
    retention_days: float | None = setting(None, kind=float, bounds=(1, 36500), shown="off", metavar="DAYS",
                                           help="delete the tasks that ended (completed, failed, canceled, "
                                                "rejected) more than DAYS days ago, with their events, webhooks and "
                                                "message claims, a few hundred at a time; a caller then gets "
                                                "TaskNotFound for them. Off: tasks are kept for ever")
    backend: str = setting("persona", choices=("persona", "echo", "scenarios"),
                           help="what answers: the persona, an echo (tests and benchmarks), or the A2A "
                                "conformance kit's scenarios by messageId prefix, echoing the rest")
    echo_log: str | None = setting(None, flag=False, metavar="FILE",
                                   help="with the echo backend: append a line per call to this file (tests)")
    log_messages: bool = setting(False, kind=bool,
                                 help="log every A2A request and response, message text included")
    access_log: bool = setting(False, kind=bool,
                               help="log one line per request: method, binding, status, duration, owner (never "
                                    "message text)")
    metrics: bool = setting(False, kind=bool,
                            help="serve GET /metrics in the Prometheus text format (requests, messages in flight, "
                                 "turn durations, the backend's circuit, webhooks, leases), behind the same "
                                 "credentials as the A2A endpoint; needs the metrics extra")
    tracing: bool = setting(False, kind=bool,
                            help="record OpenTelemetry spans (each request, each persona turn, and the a2a-sdk's), "
                                 "exported as the OTEL_* environment says (OTEL_TRACES_EXPORTER, default otlp); "
                                 "needs opentelemetry-sdk. Off, a caller's traceparent still reaches the agents a "
                                 "relay persona asks")

    def __post_init__(self) -> None:
        if self.base_url is not None:
            check_base_url(self.base_url)
        if self.db is not None:
            try:
                check_database_url(self.db)
            except ValueError as exc:
                raise SettingsError(f"{names_of('db')}: {exc}") from None
        if self.personas_dir is not None:
            self._check_personas_dir()
        if self.workers > 1 and not self.db and not sys.platform.startswith("linux"):
            raise SettingsError(f"{names_of('workers')} {self.workers} on SQLite needs Linux (the workers reach "
                                f"each other on abstract Unix sockets); use PostgreSQL ({names_of('db')}) or "
                                f"one worker")

    def _check_personas_dir(self) -> None:
        """What a directory of personas cannot be combined with, in one line each."""
        if self.persona is not None:
            raise SettingsError(f"give {names_of('personas_dir')} or {names_of('persona')}, not both")
        if self.backend != "persona":
            raise SettingsError(f"{names_of('personas_dir')} serves personas: it takes no --backend {self.backend}")
        others = [names_of(name) for name, on in (("db", self.db), ("grpc_port", self.grpc_port is not None),
                                                   ("workers", self.workers > 1), ("name", self.name),
                                                   ("description", self.description)) if on]
        if others:
            raise SettingsError(f"{names_of('personas_dir')} serves each persona on its own; it cannot be combined "
                                f"with {', '.join(others)} yet (serve a persona that needs it with --persona)")

    def persona_files(self) -> list[Path]:
        """The persona files of ``personas_dir``, by name; a :class:`SettingsError` when there
        is none, or two personas would have one path."""
        directory = Path(self.personas_dir).expanduser()
        if not directory.is_dir():
            raise SettingsError(f"{names_of('personas_dir')}: {directory} is not a directory")
        files = sorted(directory.glob("*.json"))
        if not files:
            raise SettingsError(f"{names_of('personas_dir')}: {directory} holds no persona file (*.json)")
        paths: dict[str, Path] = {}
        for file in files:
            path = directory_name(persona_file_name(file))
            if path in paths:
                raise SettingsError(f"{names_of('personas_dir')}: {paths[path].name} and {file.name} both name a "
                                    f"persona served at .../{path}: rename one")
            paths[path] = file
        return files

    def for_persona(self, file: Path) -> "BridgeSettings":
        """The settings of one persona of ``personas_dir``: served at ``PUBLIC_URL/NAME``, its
        tasks in ``state_dir/NAME`` (or its own default directory)."""
        path = directory_name(persona_file_name(file))
        state_dir = str(Path(self.state_dir).expanduser() / path) if self.state_dir else None
        return dataclasses.replace(self, persona=str(file), personas_dir=None, base_url=f"{self.public_url}/{path}",
                                   state_dir=state_dir)

    @property
    def public_url(self) -> str:
        """The A2A endpoint's URL as clients should use it (no trailing slash)."""
        if self.base_url:
            return self.base_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/a2a"

    @property
    def card_url(self) -> str:
        """Where the agent card is served, under the endpoint's URL."""
        return f"{self.public_url}{CARD_PATHS[0]}"

    @property
    def jwks_url(self) -> str:
        """Where the public key of the card's signature is served (the signature's ``jku``)."""
        return f"{self.public_url}{JWKS_PATH}"

    @property
    def database_url(self) -> str:
        """The SQLAlchemy URL of the task store: ``db``, or the SQLite file under
        ``state_dir``, which runs on the stdlib ``sqlite3`` (SQLAlchemy's ``pysqlite``)."""
        if self.db:
            return self.db
        directory = Path(self.state_dir).expanduser() if self.state_dir else self.own_state_dir
        return f"sqlite+pysqlite:///{directory / STORE_FILE_NAME}"

    @functools.cached_property
    def persona_name(self) -> str:
        """Who answers: ``echo`` or ``scenarios`` for those backends, else the persona's name
        (its file read once: the store, the card and the handler all ask)."""
        return self.backend if self.backend in ("echo", "scenarios") else persona_file_name(self.persona)

    @property
    def own_state_dir(self) -> Path:
        """The default ``state_dir``: this bridge's own under :func:`default_state_dir`, named for
        its persona and port (``ovos-8337``), so bridges of other personas or ports never share
        a task store by accident."""
        return default_state_dir() / f"{directory_name(self.persona_name)}-{self.port}"

    @property
    def store(self) -> str:
        """Where tasks are kept, to show a person: the SQLite file, or the URL without its password."""
        path = sqlite_path(self.database_url)
        return str(path) if path is not None else redact_url(self.database_url)

    @property
    def connection_limit(self) -> int:
        """``max_connections``, or its default from the open-file limit (:func:`connections_allowed`)."""
        if self.max_connections is not None:
            return self.max_connections
        return connections_allowed(open_file_limit(), 2 if self.grpc_port is not None else 1)

    @property
    def stream_share(self) -> int:
        """``max_streams_per_caller``, or its default: a quarter of :attr:`connection_limit` (at least 1)."""
        if self.max_streams_per_caller is not None:
            return self.max_streams_per_caller
        return max(1, self.connection_limit // 4)

    @property
    def requires_auth(self) -> bool:
        return bool(self.password or self.tokens)

    @classmethod
    def load(cls, values: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> "BridgeSettings":
        """Settings from explicit ``values`` (flags; ``None`` means not given), then the
        environment (``OVOS_A2A_<NAME>``), then the settings file (``config``), then
        defaults (see :func:`given_value`). The file's values are type-checked (see
        :func:`read_settings_file`), and its numbers checked as the environment's are (out of
        range: clamped, with a warning naming the file). A secret given as a flag is taken,
        with a warning saying where to put it instead. Raises :class:`SettingsError`."""
        env = os.environ if env is None else env
        values = values or {}
        path = values.get("config") or env.get(ENV_PREFIX + "CONFIG") or None
        from_file = read_settings_file(path) if path else {}
        clean: dict[str, Any] = {}
        for f in fields(cls):
            raw, source = given_value(f, values, env, from_file, path)
            if raw is None:
                continue
            if source == flag_name(f) and holds_secret(f, raw):
                LOG.warning("%s on the command line shows its secret to every user of this machine (ps); set %s, "
                            "or %s FILE (a file only you can read), instead", source, env_name(f),
                            secret_file_flag(f))
            clean[f.name] = _convert(f, raw, source)
        return cls(**clean)

    def check_exposure(self) -> None:
        """Refuse to listen beyond loopback with no credentials configured, and gRPC with
        credentials (the gRPC endpoint does not check them)."""
        if self.grpc_port is not None and self.requires_auth:
            raise SettingsError("gRPC cannot be combined with a password or tokens yet: the gRPC endpoint "
                                "does not check credentials; serve JSON-RPC and HTTP+JSON only")
        if not is_loopback(self.host) and not self.requires_auth:
            raise SettingsError(f"refusing to listen on {self.host} without credentials: set a password "
                                f"({ENV_PREFIX}PASSWORD or --password-file) or tokens ({ENV_PREFIX}TOKENS or "
                                f"--tokens-file), or listen on 127.0.0.1")


# ---- names, conversion, checks ---------------------------------------------------------------

def open_file_limit() -> int:
    """This process's open-file limit (``ulimit -n``, the soft ``RLIMIT_NOFILE``);
    :data:`MOST_CONNECTIONS` where there is none or it cannot be read."""
    try:
        import resource
    except ImportError:  # not a Unix
        return MOST_CONNECTIONS
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MOST_CONNECTIONS if soft == resource.RLIM_INFINITY else min(soft, MOST_CONNECTIONS)


def connections_allowed(file_limit: int, endpoints: int = 1) -> int:
    """The default of ``max_connections``: the files left beyond :data:`RESERVED_FILES`,
    shared by the ``endpoints`` (HTTP, and gRPC) and as many again for the connections the
    event loop has accepted but not yet closed when many arrive at once (at least 1)."""
    return max(1, (file_limit - RESERVED_FILES) // (endpoints + 1))


def read_settings_file(path: str) -> dict[str, Any]:
    """The settings of a JSON file, by field name (``max_concurrent`` or ``max-concurrent``;
    for a secret setting also ``NAME_file``, the file that holds it). A :class:`SettingsError`
    in one line for a file that cannot be read, is no JSON object, names a setting that does
    not exist (a typo must not be ignored), gives a value of the wrong type (see
    :func:`wrong_type`), or holds a secret while other users may read it."""
    import difflib
    import json

    file = Path(path).expanduser()
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"{names_of('config')}: cannot read {path}: {(exc.strerror or str(exc)).lower()}") from None
    except ValueError as exc:
        raise SettingsError(f"{names_of('config')}: {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{names_of('config')}: {path} must hold a JSON object of settings")
    known = {f.name: f for f in fields(BridgeSettings) if f.name != "config"}
    secret_files = {f"{name}_file" for name, f in known.items() if spec_of(f).secret}
    settings = {}
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in known and name not in secret_files:
            near = difflib.get_close_matches(name, sorted({*known, *secret_files}), n=1)
            raise SettingsError(f"{names_of('config')}: {path} names no setting {key!r}"
                                + (f"; did you mean {near[0]!r}?" if near else ""))
        wrong = wrong_type(known[name], value) if name in known else \
            None if value is None or isinstance(value, str) else f"must be a file name (a string), not {_json_type(value)}"
        if wrong:
            raise SettingsError(f"{names_of('config')}: {path}: {key} {wrong}")
        settings[name] = value
    secrets = [name for name, value in settings.items()
               if name in known and value not in (None, "") and holds_secret(known[name], value)]
    mode = open_to_others(file) if secrets else None
    if mode is not None:
        instead = ", ".join(f"{env_name(known[name])} or {secret_file_flag(known[name])}" for name in secrets)
        raise SettingsError(f"{names_of('config')}: {path} holds a secret ({', '.join(secrets)}) and other users may "
                            f"read it (mode {mode:04o}): chmod 600 {path}, or set {instead} instead")
    return settings


def wrong_type(f: Field, value: Any) -> str | None:
    """What is wrong with ``value`` as the settings file's value of ``f`` (``must be an
    integer, not a string``), or ``None`` when its JSON type fits the setting (``null``: not set)."""
    spec = spec_of(f)
    if value is None:
        return None
    if spec.kind is bool:
        fits, wanted = isinstance(value, bool), "true or false"
    elif spec.kind is int:
        fits, wanted = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif spec.kind is float:
        fits, wanted = isinstance(value, (int, float)) and not isinstance(value, bool), "a number"
    elif spec.kind is tuple:
        fits = isinstance(value, list) and all(isinstance(item, str) for item in value)
        wanted = 'a list of strings (["a", "b"])'
    else:
        fits, wanted = isinstance(value, str), "a string"
    if not fits:
        return f"must be {wanted}, not {_json_type(value)}"
    if spec.choices and value not in spec.choices:
        return f"must be one of {', '.join(spec.choices)}, not {value!r}"
    return None


def _json_type(value: Any) -> str:
    """The JSON name of ``value``'s type, as a person reads it (never the value: it may be a secret)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list" if all(isinstance(item, str) for item in value) else "a list of other things than strings"
    return "an object" if isinstance(value, dict) else type(value).__name__


# ---- secrets -----------------------------------------------------------------------------------

def holds_secret(f: Field, value: Any) -> bool:
    """Whether ``value`` of the setting ``f`` is a secret (see ``Spec.secret``)."""
    secret = spec_of(f).secret
    if callable(secret):
        return isinstance(value, str) and secret(value)
    return bool(secret) and bool(value)


def secret_file_flag(f: Field) -> str:
    """``--password-file`` for ``password``: the flag naming the file that holds a secret setting."""
    return f"{flag_name(f)}-file"


def secret_file_env(f: Field) -> str:
    """``OVOS_A2A_PASSWORD_FILE`` for ``password``."""
    return f"{env_name(f)}_FILE"


def given_value(f: Field, values: Mapping[str, Any], env: Mapping[str, str], from_file: Mapping[str, Any],
                path: str | None) -> tuple[Any, str]:
    """``(raw value or None, where it came from)`` of the setting ``f``: from its flag, its
    variable or the settings file, the first that gives one (empty is not given). At each of
    those places a secret setting may instead name the file that holds it (``--password-file``,
    ``OVOS_A2A_PASSWORD_FILE``, ``password_file``), read by :func:`read_secret_file`; both
    at one place is a :class:`SettingsError`."""
    in_file = f"{names_of('config')}: {path}: "
    places = ((values, f.name, f"{f.name}_file", "", flag_name(f), secret_file_flag(f)),
              (env, env_name(f), secret_file_env(f), "", env_name(f), secret_file_env(f)),
              (from_file, f.name, f"{f.name}_file", in_file, f.name, f"{f.name}_file"))
    for mapping, key, file_key, prefix, name, file_name in places:
        raw = mapping.get(key)
        held_in = mapping.get(file_key) if spec_of(f).secret else None
        raw, held_in = (None if x == "" else x for x in (raw, held_in))
        if raw is not None and held_in is not None:
            raise SettingsError(f"{prefix}give {name} or {file_name}, not both")
        if held_in is not None:
            return read_secret_file(f, held_in, f"{prefix}{file_name}"), f"{prefix}{file_name}"
        if raw is not None:
            return raw, (f"{path}: {f.name}" if prefix else name)
    return None, ""


def read_secret_file(f: Field, path: str, source: str) -> str | list[str]:
    """The value of the secret setting ``f`` held in the file ``path`` (named ``source`` in
    errors): its text without the line end; for a list (``tokens``), one item per line or
    comma separated. A :class:`SettingsError` when the file cannot be read, holds nothing,
    or other users may read it."""
    file = Path(path).expanduser()
    try:
        mode = open_to_others(file)
        text = file.read_text(encoding="utf-8") if mode is None else ""
    except OSError as exc:
        raise SettingsError(f"{source}: cannot read {path}: {(exc.strerror or str(exc)).lower()}") from None
    except UnicodeDecodeError:
        raise SettingsError(f"{source}: {path} is not UTF-8 text") from None
    if mode is not None:
        raise SettingsError(f"{source}: other users may read {path} (mode {mode:04o}): chmod 600 {path}")
    value: str | list[str] = text.strip("\r\n")
    if spec_of(f).kind is tuple:
        value = [item.strip() for item in re.split(r"[,\n]", text) if item.strip()]
    if not value:
        raise SettingsError(f"{source}: {path} is empty")
    return value


def open_to_others(path: Path) -> int | None:
    """The permission bits of ``path`` when users other than its owner may read or change
    it (any group or other bit), else ``None`` (also where there are no such bits: not POSIX).
    Raises ``OSError`` when it cannot be looked at."""
    if os.name != "posix":
        return None
    mode = path.stat().st_mode & 0o777
    return mode if mode & 0o077 else None


def flag_name(f: Field) -> str:
    """``--max-concurrent`` for ``max_concurrent``; ``--no-relay-progress`` for a switch that is
    on unless given (a bool whose default is True)."""
    off = spec_of(f).kind is bool and f.default is True
    return ("--no-" if off else "--") + f.name.replace("_", "-")


def env_name(f: Field) -> str:
    """``OVOS_A2A_MAX_CONCURRENT`` for ``max_concurrent``."""
    return ENV_PREFIX + f.name.upper()


def names_of(name: str) -> str:
    """How a person sets the field ``name``: ``--base-url (OVOS_A2A_BASE_URL)``."""
    f = next(f for f in fields(BridgeSettings) if f.name == name)
    return f"{flag_name(f)} ({env_name(f)})" if spec_of(f).flag else env_name(f)


def _convert(f: Field, raw: Any, source: str) -> Any:
    """``raw`` as the field's kind. A number out of bounds is clamped and a malformed
    number or boolean replaced by the default, each with a warning naming ``source``."""
    spec = spec_of(f)
    if spec.kind is tuple:
        items = raw.split(",") if isinstance(raw, str) else raw
        return tuple(str(t).strip() for t in items if str(t).strip())
    if spec.kind is bool:
        return _boolean(source, raw, f.default)
    if spec.kind in (int, float):
        return _number(source, raw, f.default, spec.kind, spec.bounds)
    return str(raw)


def _boolean(source: str, value: Any, default: bool) -> bool:
    meaning = yes_or_no(value if isinstance(value, bool) else str(value))
    if meaning is not None:
        return meaning
    if not str(value).strip():  # an empty variable is off
        return False
    LOG.warning("%s=%r is not true or false; using %s", source, value, "on" if default else "off")
    return default


def _number(source: str, value: Any, default: Any, kind: type, bounds: tuple[float, float] | None) -> Any:
    try:
        number = kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError, OverflowError):
        LOG.warning("%s=%r is not a number; using %s", source, value, number_text(default))
        return default
    if bounds is not None and not bounds[0] <= number <= bounds[1]:
        clamped = kind(min(max(number, bounds[0]), bounds[1]))
        LOG.warning("%s=%r is out of range [%s, %s]; using %s", source, value, number_text(bounds[0]), number_text(bounds[1]),
                    number_text(clamped))
        return clamped
    return number


def flag_type(f: Field) -> Callable[[str], Any]:
    """The argparse ``type`` of a field's flag: the field's kind, within its bounds; a
    value out of range is a usage error (``argument --port: must be 0 to 65535, got 99999``)."""
    spec = spec_of(f)

    def parse(text: str) -> Any:
        try:
            number = spec.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {'an integer' if spec.kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        low, high = spec.bounds or (None, None)
        if low is not None and not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be {number_text(low)} to {number_text(high)}, got {text}")
        return number

    parse.__name__ = spec.kind.__name__  # argparse names the type in some messages
    return parse


def check_base_url(url: str) -> None:
    """Raise :class:`SettingsError` unless ``url`` is an http(s) URL with a host (and a
    valid port), without query or fragment."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a port out of range
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query \
            or parts.fragment:
        raise SettingsError(f"{names_of('base_url')} must be an http(s) URL with a host, such as "
                            f"https://ovos.example.com/a2a; got {url!r}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name, an address, or an IPv6 address in brackets) is this machine:
    a loopback address, ``localhost`` or a name under ``.localhost`` (RFC 6761), or
    ``ip6-localhost``."""
    host = host.strip().strip("[]").lower().rstrip(".")
    if host in ("localhost", "ip6-localhost") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


# ---- the flags and the README table, from the specs ------------------------------------------

def default_text(f: Field) -> str:
    """The default as a person reads it: ``15``, ``127.0.0.1``, ``the persona's``, ``—``."""
    spec = spec_of(f)
    if spec.shown is not None:
        return spec.shown
    if spec.kind is bool:
        return "on" if f.default else "off"
    if f.default is None or f.default == ():
        return "—"
    return number_text(f.default) if spec.kind in (int, float) else str(f.default)


def _about(f: Field) -> str:
    """``default 15, 1–300; OVOS_A2A_HEARTBEAT``: the default, bounds and variable of a setting."""
    default = "" if default_text(f) == "—" else f"default {default_text(f)}"
    values = ", ".join(x for x in (default, bounds_text(f)) if x)
    return "; ".join(x for x in (values, env_name(f) if spec_of(f).flag else "") if x)


def secret_help(f: Field) -> str:
    """What the help and the README say of a secret setting: where it is safe."""
    what = "with a password it is a secret" if callable(spec_of(f).secret) else "a secret"
    return (f"{what}: not on the command line, where every user sees it (ps), but in {env_name(f)} or in a "
            f"file only you can read: {secret_file_flag(f)} ({secret_file_env(f)}) or --config")


def secret_file_help(f: Field) -> str:
    """The help of a secret setting's ``--NAME-file`` flag."""
    items = " (one per line, or comma separated)" if spec_of(f).kind is tuple else ""
    return (f"read {flag_name(f) if spec_of(f).flag else env_name(f)} from FILE{items}; refused if other users may "
            f"read FILE")


def add_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting that has one, its help from the setting's :class:`Spec`
    (default, bounds, environment variable), and a ``--NAME-file`` flag per secret setting.
    Every flag defaults to ``None`` (not given), so that :meth:`BridgeSettings.load` can fall
    back to the environment."""
    for f in fields(BridgeSettings):
        spec = spec_of(f)
        if spec.flag:
            meaning = f"{spec.help} ({secret_help(f)})" if spec.secret else spec.help
            text = f"{meaning} [{_about(f)}]".replace("%", "%%")
            if spec.kind is bool:
                parser.add_argument(flag_name(f), dest=f.name, action="store_false" if f.default else "store_true",
                                    default=None, help=text)
            else:
                number = spec.kind in (int, float)
                parser.add_argument(flag_name(f), dest=f.name, default=None, help=text, choices=spec.choices,
                                    type=flag_type(f) if number else str,
                                    metavar=spec.metavar or ("N" if number else None))
        if spec.secret:
            parser.add_argument(secret_file_flag(f), dest=f"{f.name}_file", default=None, metavar="FILE",
                                help=f"{secret_file_help(f)} [{secret_file_env(f)}]".replace("%", "%%"))


def environment_only_help() -> str:
    """The settings without a flag, for the end of ``serve --help``."""
    lines = ["settings only in the environment:"]
    for f in fields(BridgeSettings):
        spec = spec_of(f)
        if not spec.flag:
            meaning = f"{spec.help} ({secret_help(f)})" if spec.secret else spec.help
            lines.append(f"  {env_name(f)}: {meaning}" + (f" [{_about(f)}]" if _about(f) else ""))
    return "\n".join(lines)


def settings_table() -> str:
    """docs/bridge.md's settings table (Markdown), one row per setting."""
    rows = []
    for f in fields(BridgeSettings):
        spec = spec_of(f)
        flag = flag_name(f) + (f" {spec.metavar}" if spec.metavar else "") if spec.flag else "—"
        flag = f"`{flag}`" if spec.flag else flag
        env, meaning = f"`{env_name(f)}`", spec.help
        if spec.secret:
            flag = f"`{secret_file_flag(f)} FILE`" if flag == "—" else f"{flag}, `{secret_file_flag(f)} FILE`"
            env, meaning = f"{env}, `{secret_file_env(f)}`", f"{meaning} ({secret_help(f)})"
        rows.append((flag, env, default_cell(f, default_text(f), plain=("—", "on", "off")), meaning))
    return markdown_table(("flag", "environment", "default", "meaning"), rows)
