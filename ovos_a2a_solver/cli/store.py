# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a store check [--move-aside]``: the task rows of a bridge's store whose stored copy
cannot be read, listed (id, owner, size, error), and moved aside with ``--move-aside``.

It opens the store ``ovos-a2a serve`` would open with the same flags, ``OVOS_A2A_*``
environment and settings file (``--state-dir``, ``--db``, or the default state directory of
``--persona`` and ``--port``; each persona's with ``--personas-dir``), and may run while the
bridge serves. Exit status 0 when every task can be read (or every unreadable one was moved
aside), 1 when unreadable rows remain, 2 for a setting to change.
"""
from __future__ import annotations

import argparse
import asyncio

from ovos_a2a_solver.bridge.config import add_flags
from ovos_a2a_solver.cli.output import CommandError, Output

CHECK_SUMMARY = "list the tasks whose stored copy cannot be read (--move-aside: move them aside)"


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``store`` command's own commands (``check``) and their flags: the bridge's settings,
    as ``serve`` takes them, to find the same store."""
    commands = parser.add_subparsers(dest="store_command", required=True, metavar="COMMAND")
    check = commands.add_parser("check", help=CHECK_SUMMARY, description=CHECK_SUMMARY[0].upper() + CHECK_SUMMARY[1:]
                                + ". The store is the one 'ovos-a2a serve' opens with the same flags and "
                                  "OVOS_A2A_* environment.")
    check.add_argument("--move-aside", action="store_true",
                       help="move each unreadable row into the table bridge_tasks_unreadable (its bytes, the time "
                            "and the error kept), one transaction each; the task is then not found")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    settings = check.add_argument_group("the bridge's settings (as ovos-a2a serve takes them)")
    add_flags(settings)
    check.set_defaults(run=cmd_store_check)


def cmd_store_check(args, out: Output) -> int:
    """``ovos-a2a store check``: list (and with ``--move-aside`` move) the unreadable rows of
    each store the settings name; the exit status (see the module)."""
    from ovos_a2a_solver.bridge.config import BridgeSettings, SettingsError

    flags = {key: value for key, value in vars(args).items() if key not in ("move_aside", "json", "debug")}
    try:
        settings = BridgeSettings.load(flags)
        every = ([settings.for_persona(file) for file in settings.persona_files()] if settings.personas_dir
                 else [settings])
    except SettingsError as exc:
        raise CommandError(" ".join(str(exc).split()), 2) from None
    reports = [asyncio.run(_check(one, args.move_aside)) for one in every]
    if out.as_json:
        out.json(reports if settings.personas_dir else reports[0])
    else:
        for report in reports:
            _show(report, out)
    return 1 if any(report["remaining"] for report in reports) else 0


async def _check(settings, move: bool) -> dict:
    """What one store holds that cannot be read, and what was moved aside."""
    from ovos_a2a_solver.bridge.storage.database_url import sqlite_path
    from ovos_a2a_solver.bridge.storage.database import StoreUnusable, in_words, open_stores
    from ovos_a2a_solver.bridge.storage.unreadable import SIDE_TABLE, find_unreadable, has_task_table, move_aside

    report = {"store": settings.store, "tasks": 0, "unreadable": [], "moved": 0, "remaining": 0,
              "side_table": SIDE_TABLE}
    path = sqlite_path(settings.database_url)
    if path is not None and not path.exists():
        report["note"] = "no store yet (no bridge has served with these settings)"
        return report
    db, _store = open_stores(settings.database_url)
    try:
        if not await has_task_table(db):
            report["note"] = "no task table yet"
            return report
        report["tasks"], found = await find_unreadable(db)
        report["unreadable"] = [row.as_dict() for row in found]
        for row in found:
            if move and await move_aside(db, row):
                report["moved"] += 1
            else:
                report["remaining"] += 1
    except (OSError, StoreUnusable) as exc:
        raise CommandError(f"cannot read the store {settings.store}: {in_words(exc)}") from None
    finally:
        await db.aclose()
    return report


def _show(report: dict, out: Output) -> None:
    """One store's report, for a person."""
    print(f"{out.bold('store')}  {report['store']}")
    if "note" in report:
        print(f"  {report['note']}")
        return
    if not report["unreadable"]:
        print(f"  every task can be read ({report['tasks']} task(s))")
        return
    print(f"  {len(report['unreadable'])} of {report['tasks']} task(s) cannot be read:")
    for row in report["unreadable"]:
        print(f"  {row['id']}  owner {row['owner']!r}  {row['size']} bytes  {out.dim(row['error'])}")
    if report["moved"]:
        print(f"  moved aside into {report['side_table']}: {report['moved']}")
    if report["remaining"]:
        print(f"  still in place: {report['remaining']}"
              + ("" if report["moved"] else " (--move-aside moves them into " + report["side_table"] + ")"))
