"""A command in a pseudo-terminal, as a person runs it, with Ctrl-C working however the suite
was started: a background job of a non-interactive shell (``nohup pytest &``, a CI wrapper)
starts with SIGINT ignored, every child inherits that, and a Ctrl-C test would then prove
nothing but the wrapper. The child gets the default SIGINT back before it runs."""
from __future__ import annotations

import signal

import pytest


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn_in_terminal(command: str, args: list[str], **options):
    """``pexpect.spawn(command, args, **options)`` with SIGINT at its default in the child
    (UTF-8 text and a 30 s timeout unless ``options`` say otherwise)."""
    pexpect = pytest.importorskip("pexpect")
    options.setdefault("encoding", "utf-8")
    options.setdefault("timeout", 30)
    return pexpect.spawn(command, args, preexec_fn=_default_sigint, **options)
