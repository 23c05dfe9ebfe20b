"""Tests that measure time run alone, when the suite runs in pytest-xdist workers.

A test marked ``alone`` (a latency, or how the time of some work grows with its size) would
measure the other workers' tests as much as its own code on a machine of two cores. Every
test of every worker holds the run's lock: shared for most tests, whole for an ``alone`` one,
so that one waits until the tests running meanwhile have ended, and no other test starts until
it has ended. A turnstile (a second lock) keeps new tests from overtaking a waiting ``alone``
test. Without workers (no ``PYTEST_XDIST_WORKER``) there is nothing to wait for.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from support.state_home import RUN_STATE_HOME_VAR


@contextlib.contextmanager
def one_at_a_time(alone: bool) -> Iterator[None]:
    """Hold the run's lock while the body runs: whole if ``alone``, else shared with other tests."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    run = Path(os.environ[RUN_STATE_HOME_VAR])
    with open(run / "tests.turnstile", "a") as turnstile, open(run / "tests.lock", "a") as lock:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            if not alone:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        yield  # both locks are released when the files close
