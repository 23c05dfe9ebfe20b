"""Waiting for something observable, in tests: a wait that times out fails the test."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")

WAIT = 30.0  # generous upper bound for anything a test waits on


def wait_until(predicate: Callable[[], T], what: str, timeout: float = WAIT, interval: float = 0.05) -> T:
    """Call ``predicate`` until it returns something truthy, and return that.

    Raises ``AssertionError`` naming ``what`` and the last value seen after ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what} (last seen: {value!r})")
        time.sleep(interval)
