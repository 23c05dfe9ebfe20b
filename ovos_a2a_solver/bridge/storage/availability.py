# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Whether the task store is away for now, and what the bridge says and logs meanwhile.

A database that cannot be reached, restarts, turned read-only or has a full disk is not a
fault of the request nor of the bridge: callers are told "try again shortly" (the bindings'
"unavailable", see ``edge.busy``), never the database's address or words. Those go to the
log, one line per :data:`LOG_EVERY` seconds for each kind of failure, with a count of the
lines left out.

* :func:`store_unavailable` is the one place that says which errors mean "away for now".
* :class:`StoreAvailability` remembers what was last seen of the store (by each source that
  reports: the request handler, ``/health``, a replica's lease), logs it, and tells
  ``/health`` whether the store is available.
"""
from __future__ import annotations

import logging
import sqlite3
import sys
import time
from collections.abc import Callable

from ovos_a2a_solver.bridge.observe.log_safety import EVERY, Throttle

LOG = logging.getLogger("ovos_a2a_solver.bridge")

#: seconds between two log lines about one kind of failure (those in between are counted)
LOG_EVERY = EVERY

#: SQLite's primary result codes that mean the store cannot write (or be read) for now
SQLITE_AWAY = {sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_BUSY,
               sqlite3.SQLITE_CANTOPEN}

#: the source of the reports of requests and of ``/health``'s probes
STORE = "store"

#: ``/health``'s write probe: one row, written again whenever the store was seen away
PROBE_SCHEMA = "CREATE TABLE IF NOT EXISTS bridge_store_probe (id INTEGER PRIMARY KEY, checked DOUBLE PRECISION NOT NULL)"
PROBE_WRITE = ("INSERT INTO bridge_store_probe (id, checked) VALUES (1, :checked) "
               "ON CONFLICT (id) DO UPDATE SET checked = excluded.checked")

_MOST_LINKS = 8  # how far along an exception's causes to look


class StoreOutOfReach(Exception):
    """This process may no longer write its tasks to the store for now (a replica whose lease
    ended unrenewed: nothing it writes counts until it holds a lease again), so the calls that
    wait for a write of its are answered "unavailable" at once, as when the store is away."""


def store_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from or while handling) says that the
    store is away for now: it cannot be reached, it restarts or shuts down, it is read-only
    or its disk is full, or a call to it timed out."""
    return _away_kind(exc) is not None


def away_kind(exc: BaseException) -> str:
    """A short name of the kind of failure ``exc`` is (the log counts each kind apart)."""
    return _away_kind(exc) or type(exc).__name__


def _away_kind(exc: BaseException) -> str | None:
    from a2a.utils.errors import A2AError, InternalError

    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < _MOST_LINKS:
        if isinstance(link, A2AError) and not isinstance(link, InternalError):  # an answer chosen (a webhook
            # refused, say) stands; an internal error may wrap the store's
            return None
        seen.add(id(link))
        kind = _kind_of(link)
        if kind is not None:
            return kind
        # what it was raised from, or while handling, unless it said that is beside the point (from None)
        link = link.__cause__ or (None if link.__suppress_context__ else link.__context__)
    return None


def _kind_of(exc: BaseException) -> str | None:
    if isinstance(exc, StoreOutOfReach):
        return type(exc).__name__
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in SQLITE_AWAY:
            return getattr(exc, "sqlite_errorname", None) or f"SQLITE error {code}"
        return None
    postgres = sys.modules.get("asyncpg.exceptions")  # never imported here: loaded only where PostgreSQL is used
    if postgres is not None and isinstance(exc, (
            postgres.PostgresConnectionError,        # 08: the connection failed or is gone
            postgres.OperatorInterventionError,      # 57: shutting down, restarting, a statement cancelled
            postgres.InsufficientResourcesError,     # 53: disk full, out of memory, too many connections
            postgres.ReadOnlySQLTransactionError,    # 25006: a read-only server (a standby, say)
            # the driver's own word that a connection is closed or in no state to go on (after the
            # server ended it in the middle of an operation, say): the next connection will do
            postgres.InterfaceError, postgres.InternalClientError)):
        return type(exc).__name__
    if isinstance(exc, (OSError, TimeoutError)) and _raised_by_the_driver(exc):
        return type(exc).__name__  # connecting (refused, unreachable, no socket), a timed-out call
    return None


def _raised_by_the_driver(exc: BaseException) -> bool:
    """Whether ``exc`` was raised within the database's driver (asyncpg): an ``OSError`` or a
    time-out from elsewhere (a webhook's host, a sibling worker's socket) is not the store's."""
    frame = exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_globals.get("__name__", "").startswith("asyncpg"):
            return True
        frame = frame.tb_next
    return False


class StoreAvailability:
    """What was last seen of the store, and the log lines about it.

    Each source reports failures (:meth:`failed`) and successes (:meth:`works`); the store is
    :attr:`available` while no source's last report is a failure. The request handler and
    ``/health`` report as :data:`STORE`; a replica's lease renewer may report as a source of
    its own (a lease that cannot be renewed keeps the store unavailable, whatever the
    requests see). ``clock`` gives monotonic seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._away: dict[str, float] = {}  # source -> when its failures began
        self._lines = Throttle(LOG_EVERY, clock)
        self.failures = 0  # failures seen since the store was last available

    @property
    def available(self) -> bool:
        """Whether no source's last report is a failure."""
        return not self._away

    def away_for(self) -> float:
        """Seconds since the store was first seen away (0 while it is available)."""
        return self._clock() - min(self._away.values()) if self._away else 0.0

    def failed(self, exc: BaseException, source: str = STORE) -> None:
        """``source`` saw the store fail with ``exc``: unavailable until it sees it work. Logged
        as a WARNING with the database's own words, once per :data:`LOG_EVERY` seconds for each
        kind of failure."""
        now = self._clock()
        self._away.setdefault(source, now)
        self.failures += 1
        kind = away_kind(exc)
        left_out = self._lines.admit(kind)
        if left_out is None:
            return
        LOG.warning("the task store is unavailable (%s, seen by %s): %s%s; callers are asked to try again",
                    kind, source, _words(exc), self._lines.more(left_out))

    def works(self, source: str = STORE) -> None:
        """``source`` saw the store work again."""
        if self._away.pop(source, None) is None:
            return
        if not self._away:
            LOG.warning("the task store works again (%d failure(s) seen)", self.failures)
            self.failures = 0


def _words(exc: BaseException) -> str:
    """The database's own words: the message of the failure that says the store is away."""
    link: BaseException | None = exc
    for _ in range(_MOST_LINKS):
        if link is None:
            break
        if _kind_of(link) is not None:
            return f"{type(link).__name__}: {link}"
        link = link.__cause__ or link.__context__
    return f"{type(exc).__name__}: {exc}"
