"""The order modules go to the pytest-xdist workers in: longest first.

With ``--dist loadscope`` each module is one unit of work, handed to the next idle worker in
the order of collection (``--no-loadscope-reorder``). A long module handed out last runs on
one worker while the others have ended; handed out first, it runs beside the rest and the
short ones fill in around it. How long each module takes is kept in ``test/module_seconds.json``
(seconds of a whole run, made by ``tools/module_seconds.py`` from pytest's JUnit XML reports).
A module not in it goes first: one never measured may be long.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

TEST_ROOT = Path(__file__).resolve().parent.parent
#: seconds each test module takes in a whole run, by its path under ``test/``
RECORD = TEST_ROOT / "module_seconds.json"


def recorded_seconds(record: Path = RECORD) -> dict[str, float]:
    """The record: module path under ``test/`` (``/``-separated) -> seconds."""
    return json.loads(record.read_text(encoding="utf-8"))


def module_key(path: Path) -> str:
    """How the record names the module at ``path`` (one outside ``test/``, never recorded, by its
    whole path)."""
    resolved = path.resolve()
    return resolved.relative_to(TEST_ROOT).as_posix() if resolved.is_relative_to(TEST_ROOT) else str(resolved)


def longest_first(items: Sequence, seconds: dict[str, float]) -> list:
    """``items`` with their modules ordered by the seconds recorded, longest first (a module
    never recorded before all), each module's own tests in their order."""
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(module_key(item.path), len(first_seen))

    def weight(item) -> tuple:
        key = module_key(item.path)
        return (key in seconds, -seconds.get(key, 0.0), first_seen[key])

    return sorted(items, key=weight)
