# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's settings: every knob typed, defaulted and bounded here and nowhere else.

Values come from command-line flags, then ``OVOS_A2A_*`` environment variables, then
defaults. A number out of range is clamped and a malformed one replaced by its default,
each with a warning: a bad setting never stops the bridge from starting. What cannot be
repaired (listening beyond loopback without credentials) is refused with a clear error.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import socket
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

LOG = logging.getLogger("ovos_a2a_solver.bridge")

ENV_PREFIX = "OVOS_A2A_"

# name: (minimum, maximum)
BOUNDS: dict[str, tuple[float, float]] = {
    "port": (0, 65535),
    "heartbeat": (1, 300),
    "deadline": (1, 86400),
    "cancel_grace": (0.1, 60),
    "shutdown_grace": (0, 300),
    "max_concurrent": (1, 1000),
    "max_body": (1024, 64 * 1024 * 1024),
    "max_parts": (1, 10000),
    "grpc_port": (0, 65535),
}


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/ovos_a2a_solver/bridge``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "ovos_a2a_solver" / "bridge"


@dataclass(frozen=True)
class BridgeSettings:
    """How the bridge runs (see ``ovos-a2a serve --help`` and the README's bridge section)."""

    persona: str | None = None            # persona JSON file; None: the embedded default persona
    host: str = "127.0.0.1"
    port: int = 8337
    base_url: str | None = None           # public URL of the A2A endpoint; default http://host:port/a2a
    state_dir: str | None = None          # SQLite database lives here
    db: str | None = None                 # any SQLAlchemy async URL (postgresql+asyncpg://...) instead
    name: str | None = None               # card name (default: the persona's name)
    description: str | None = None        # card description (default: the persona's)
    heartbeat: float = 15.0               # seconds of backend silence before a "still working" status
    deadline: float = 3600.0              # seconds one message may work before its outcome is "unknown"
    cancel_grace: float = 2.0             # seconds a cancel waits for the persona to reach a stopping point
    shutdown_grace: float = 3.0           # seconds running turns get to finish on SIGTERM / Ctrl-C
    max_concurrent: int = 8               # persona turns at once; more are answered "busy" at once
    max_body: int = 1024 * 1024           # bytes of one request body
    max_parts: int = 100                  # parts of one message
    username: str = "a2a"                 # Basic auth user name (with password)
    password: str | None = field(default=None, repr=False)
    tokens: tuple[str, ...] = field(default=(), repr=False)   # accepted Bearer tokens
    grpc_port: int | None = None          # serve gRPC too (needs the grpc extra)
    replica: str = field(default_factory=socket.gethostname)  # who owns in-flight work in a shared database

    @property
    def public_url(self) -> str:
        """The A2A endpoint's URL as clients should use it (no trailing slash)."""
        if self.base_url:
            return self.base_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/a2a"

    @property
    def database_url(self) -> str:
        """The SQLAlchemy URL of the task store."""
        if self.db:
            return self.db
        directory = Path(self.state_dir) if self.state_dir else default_state_dir()
        return f"sqlite+aiosqlite:///{directory / 'bridge.sqlite3'}"

    @property
    def requires_auth(self) -> bool:
        return bool(self.password or self.tokens)

    @classmethod
    def load(cls, values: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> "BridgeSettings":
        """Settings from explicit ``values`` (flags), then the environment, then defaults."""
        env = os.environ if env is None else env
        merged: dict[str, Any] = {}
        for f in fields(cls):
            raw = (values or {}).get(f.name)
            if raw is None:
                raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None and raw != "":
                merged[f.name] = raw
        return cls()._with(merged)

    def _with(self, raw: Mapping[str, Any]) -> "BridgeSettings":
        clean: dict[str, Any] = {}
        for f in fields(self):
            if f.name not in raw:
                continue
            value = raw[f.name]
            default = getattr(self, f.name)
            if f.name == "tokens":
                value = tuple(t.strip() for t in (value.split(",") if isinstance(value, str) else value) if t.strip())
            elif f.name in BOUNDS or isinstance(default, (int, float)) and not isinstance(default, bool):
                value = _number(f.name, value, default, int if f.name in ("port", "max_concurrent", "max_body", "max_parts",
                                                                           "grpc_port") else float)
            elif value is not None:
                value = str(value)
            clean[f.name] = value
        return replace(self, **clean)

    def check_exposure(self) -> None:
        """Refuse to listen beyond loopback with no credentials configured, and gRPC with
        credentials (the gRPC endpoint does not check them)."""
        if self.grpc_port is not None and self.requires_auth:
            raise ValueError("gRPC cannot be combined with a password or tokens yet: the gRPC endpoint "
                             "does not check credentials; serve JSON-RPC and HTTP+JSON only")
        if not is_loopback(self.host) and not self.requires_auth:
            raise ValueError(f"refusing to listen on {self.host} without credentials: set a password "
                             f"(--password / {ENV_PREFIX}PASSWORD) or tokens ({ENV_PREFIX}TOKENS), "
                             f"or listen on 127.0.0.1")


def _number(name: str, value: Any, default: Any, kind: type) -> Any:
    try:
        number = kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        LOG.warning("setting %s=%r is not a number; using %s", name, value, default)
        return default
    low, high = BOUNDS.get(name, (None, None))
    if low is not None and not low <= number <= high:
        clamped = kind(min(max(number, low), high))
        LOG.warning("setting %s=%r is out of range [%s, %s]; using %s", name, value, low, high, clamped)
        return clamped
    return number


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
