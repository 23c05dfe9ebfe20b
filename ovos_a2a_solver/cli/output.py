# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What ``ovos-a2a`` prints: answers on stdout, notes and the wait on stderr (dim on a
terminal, JSON with ``--json``), and the one-line error a command ends with."""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import textwrap
import time


class CommandError(Exception):
    """A failure to report in one line, with an exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class Output:
    """Terminal output: wrapped to the terminal, colour only on a TTY (and not with NO_COLOR)."""

    def __init__(self, as_json: bool = False) -> None:
        self.as_json = as_json
        self.tty = sys.stdout.isatty()
        self.color = self.tty and not os.environ.get("NO_COLOR")
        self.width = max(40, min(shutil.get_terminal_size((100, 24)).columns, 120))

    def style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def bold(self, text: str) -> str:
        return self.style(text, "1")

    def dim(self, text: str) -> str:
        return self.style(text, "2")

    def para(self, text: str, indent: str = "") -> None:
        """Text wrapped to the terminal; piped output keeps its lines as they are."""
        for line in (text or "").splitlines() or [""]:
            if not self.tty:
                print(indent + line)
                continue
            print(textwrap.fill(line, self.width, initial_indent=indent, subsequent_indent=indent) or indent.rstrip())

    def json(self, value) -> None:
        print(json.dumps(value, indent=2, ensure_ascii=False))

    def note(self, text: str) -> None:
        print(self.style(f"ovos-a2a: {text}", "2;33") if sys.stderr.isatty() else f"ovos-a2a: {text}",
              file=sys.stderr)


class NoteHandler(logging.Handler):
    """The package's log records as notes (``ovos-a2a: ...``), each on a line of its own:
    on a terminal the wait line is wiped first, so a record never runs over it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"ovos-a2a: {' '.join(record.getMessage().split())}"
            if sys.stderr.isatty():
                text = "\r\033[K" + (f"\033[2;33m{text}\033[0m" if not os.environ.get("NO_COLOR") else text)
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:  # a note that cannot be written must not end the command
            self.handleError(record)


class Waiting:
    """On a terminal, one stderr line overwritten in place while a reply is awaited:
    the elapsed time, the task id once known, the agent's latest progress message.
    Not on a pipe: there it prints nothing."""

    def __init__(self, enabled: bool, interval: float = 0.2) -> None:
        import threading

        self.enabled = enabled
        self.interval = interval
        self.task_id = ""
        self.progress = ""
        self._start = time.monotonic()
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ovos-a2a-waiting", daemon=True)
        if enabled:
            self._thread.start()

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def update(self, update) -> None:
        with self._lock:
            self.task_id = update.task_id or self.task_id
            self.progress = update.progress or update.note or self.progress

    def _line(self) -> str:
        width = max(20, shutil.get_terminal_size((100, 24)).columns - 1)
        bits = [f"waiting {self.elapsed():.0f} s"]
        if self.task_id:
            bits.append(f"task {self.task_id}")
        if self.progress:
            bits.append(" ".join(self.progress.split()))
        return " · ".join(bits)[:width]

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with self._lock:
                if self._stop.is_set():
                    return
                sys.stderr.write("\r\033[K" + self._line())
                sys.stderr.flush()
                self._shown = True

    def stop(self) -> None:
        """Stop and wipe the line (safe to call more than once)."""
        self._stop.set()
        with self._lock:
            if self._shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
                self._shown = False
