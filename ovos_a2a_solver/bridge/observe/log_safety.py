# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A log that callers cannot write into, and cannot fill.

Much of what the bridge logs carries words a caller chose: a path in the access log, a
JSON-RPC id in the a2a-sdk's warning about a bad request, a webhook's URL in a refusal. A
line break in them would start a line that looks like the bridge's own, and an escape
sequence would reach the operator's terminal. :class:`OneLineRecords`, on every handler of
the bridge's log, writes each record's message on one line: control characters (C0 with
CR, LF and TAB, DEL, C1), the Unicode line and paragraph separators and the bidirectional
overrides are written as visible escapes (``\\n``, ``\\x1b``, ``\\u2028``). A traceback,
which the formatter adds from the record's exception, keeps its lines but not the others.

:class:`Throttle` keeps a warning that a caller can set off in a loop (a refusal) to one line
per kind every :data:`EVERY` seconds; the next line says how many were left out.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import Callable

#: seconds between two lines of one kind of repeated warning
EVERY = 10.0

#: what is never written as it is: C0 controls, DEL, C1 controls, the line and paragraph
#: separators, and the bidirectional embeddings, overrides and isolates
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSAFE_IN_TRACEBACK = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    character = match.group()
    named = _NAMED.get(character)
    if named is not None:
        return named
    code = ord(character)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def one_line(text: str) -> str:
    """``text`` with every character that could break a log line or drive a terminal
    written as a visible escape."""
    return _UNSAFE.sub(_escape, text)


class OneLineRecords(logging.Filter):
    """A filter for a log handler: each record's message rendered once, on one line (see the
    module). Lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # the logging call's own mistake: the formatter reports it as ever
            return True
        record.msg, record.args = one_line(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = _UNSAFE_IN_TRACEBACK.sub(_escape, record.exc_text)
        return True


def install(handlers: list[logging.Handler]) -> None:
    """Put :class:`OneLineRecords` on each of ``handlers`` (once)."""
    for handler in handlers:
        if not any(isinstance(f, OneLineRecords) for f in handler.filters):
            handler.addFilter(OneLineRecords())


@dataclass
class _Kind:
    """One kind of warning: when its last line was written, and how many were left out since."""

    logged_at: float
    left_out: int = 0


class Throttle:
    """At most one line per kind of warning every ``every`` seconds. ``clock`` gives monotonic
    seconds."""

    def __init__(self, every: float = EVERY, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self._clock = clock
        self._kinds: dict[str, _Kind] = {}

    def admit(self, kind: str) -> int | None:
        """Whether a line of ``kind`` is written now: ``None`` when it is left out, else how many
        of its kind were left out since its last line."""
        now = self._clock()
        logged = self._kinds.get(kind)
        if logged is not None and now - logged.logged_at < self.every:
            logged.left_out += 1
            return None
        self._kinds[kind] = _Kind(logged_at=now)
        return logged.left_out if logged is not None else 0

    def more(self, left_out: int) -> str:
        """The words a line adds for the ``left_out`` ones before it (empty for none)."""
        return f" ({left_out} more like it in the last {self.every:g} s)" if left_out else ""

    def warning(self, logger: logging.Logger, kind: str, message: str, *args) -> None:
        """``logger.warning(message, *args)``, unless a line of ``kind`` was written less than
        ``every`` seconds ago; the line says how many were left out before it."""
        left_out = self.admit(kind)
        if left_out is not None:
            logger.warning(message + "%s", *args, self.more(left_out))
