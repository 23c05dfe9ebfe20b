# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The database URL of the task store (the bridge's ``db`` setting, or the SQLite file of its
state directory): which SQLite file it names, whether SQLAlchemy and its driver can run it
(probed, nothing connected), and the URL without its password, to show. Each refusal is a
``ValueError`` in words that the settings put after the setting's name. It imports nothing of
the bridge, so the settings may import it.
"""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

#: SQLAlchemy drivers that name SQLite; the bridge runs every one of them on the stdlib ``sqlite3``
SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite", "sqlite+aiosqlite")
POSTGRES_HINT = "postgresql+asyncpg://USER:PASSWORD@HOST/DB"


def has_password(url: str) -> bool:
    """Whether the database URL ``url`` holds a password."""
    return redact_url(url) != url


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (``sqlite:////abs/file``, ``sqlite:///relative``, any
    :data:`SQLITE_DRIVERS`); ``None`` for another database. An in-memory database
    (``sqlite://``, ``:memory:``, ``mode=memory``) raises ``ValueError``: each of
    the bridge's connections would see its own empty database, and nothing would survive
    a restart."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+", 1)[0].lower() != "sqlite":
        return None
    if scheme.lower() not in SQLITE_DRIVERS:
        raise ValueError(f"unknown SQLite driver in {scheme!r}; the bridge runs SQLite on the stdlib sqlite3: "
                         f"sqlite:////PATH/TO/FILE")
    path, _, query = rest.partition("?")
    path = path[1:] if path.startswith("/") else path
    if path in ("", ":memory:") or "mode=memory" in query or path.startswith("file::memory:"):
        raise ValueError(f"an in-memory SQLite database ({url}) cannot keep the bridge's tasks; name a file "
                         f"(sqlite:////PATH/TO/FILE) or leave the setting unset")
    return Path(path).expanduser()


def check_database_url(url: str) -> None:
    """Raise ``ValueError`` unless ``url`` names a SQLite file or a PostgreSQL
    database through the installed asyncpg driver (nothing is connected here)."""
    if sqlite_path(url) is not None:
        return
    try:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError, NoSuchModuleError
    except ImportError:
        raise ValueError("needs SQLAlchemy: pip install 'ovos-a2a-solver-plugin[server,postgresql]'") from None
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise ValueError(f"not a database URL: {redact_url(url)!r}; e.g. {POSTGRES_HINT}") from None
    try:
        dialect = parsed.get_dialect()
    except NoSuchModuleError:
        raise ValueError(f"unknown database {parsed.drivername!r}; use {POSTGRES_HINT} or leave the setting "
                         f"unset for SQLite") from None
    if not getattr(dialect, "is_async", False):
        raise ValueError(f"{parsed.drivername!r} is not an asyncio driver; for PostgreSQL use {POSTGRES_HINT}")
    if parsed.drivername != "postgresql+asyncpg":  # replicas listen for each other with asyncpg
        raise ValueError(f"{parsed.drivername!r} is not supported; the bridge keeps its tasks in SQLite (leave the "
                         f"setting unset) or PostgreSQL: {POSTGRES_HINT}")
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        raise ValueError(f"the driver of {parsed.drivername!r} is not installed ({exc}); for PostgreSQL: "
                         f"pip install 'ovos-a2a-solver-plugin[server,postgresql]'") from None


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    userinfo, _, hostinfo = parts.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostinfo}"))
