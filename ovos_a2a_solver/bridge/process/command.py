# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's command line: ``python -m ovos_a2a_solver.bridge [options]``, which
``ovos-a2a serve [options]`` is too (the package's command line builds on this one).

A start that fails is one line on stderr, ``ovos-a2a: <cause>``, with exit status 2 for a
setting to change and 1 for a problem of the machine or the network (``--debug``: the
traceback). Ctrl-C or SIGTERM stop the bridge gently (see ``Bridge.drain``), exit status 0.
"""
from __future__ import annotations

import argparse
import sys
import textwrap

from ovos_a2a_solver.bridge.config import SettingsError, add_flags, environment_only_help

DESCRIPTION = ("Publish an OVOS persona as a durable A2A agent. Flags win over OVOS_A2A_* environment variables "
               "(e.g. OVOS_A2A_PORT), which win over a settings file (--config), which wins over defaults. A flag "
               "out of range is an error; an environment value out of range is clamped, with a warning. Secrets "
               "(the password, tokens, a database URL with a password) go in the environment or in a file only you "
               "can read (--password-file, --tokens-file, --db-file, --config), never on the command line, where "
               "every user of the machine sees them.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The serve flags (one per bridge setting, see ``config``) and ``--debug``, with their help."""
    parser.description = textwrap.fill(DESCRIPTION, 80)
    parser.epilog = environment_only_help()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    add_flags(parser)
    parser.add_argument("--debug", action="store_true",
                        help="debug logs of the bridge and tracebacks (message text only with --log-messages)")


def run(args: argparse.Namespace) -> int:
    """Load the settings (flags, then ``OVOS_A2A_*``), then serve until a signal; return the
    exit status."""
    from ovos_a2a_solver.bridge.config import BridgeSettings
    from ovos_a2a_solver.bridge.process.serve import serve
    from ovos_a2a_solver.bridge.process.startup import (StartError, banner, configure_logging, log_access,
                                                        log_messages)

    configure_logging(args.debug)
    try:
        settings = BridgeSettings.load(vars(args))
        log_messages(settings.log_messages)
        log_access(settings.access_log)
        serve(settings, ready=lambda s, served, workers: announce(banner(s, served, workers)), verbose=args.debug)
        print("ovos-a2a: stopped", flush=True)
    except (StartError, SettingsError) as exc:
        if args.debug:
            raise
        print(f"ovos-a2a: {' '.join(str(exc).split())}", file=sys.stderr)
        return getattr(exc, "status", 2)
    except KeyboardInterrupt:
        return 130
    return 0


def announce(lines: list[str]) -> None:
    """The bridge serves: say so to the person (the banner) and to a service manager."""
    from ovos_a2a_solver.bridge.process.service_manager import notify

    print("\n".join(lines), flush=True)
    notify(f"READY=1\nSTATUS={lines[0].removeprefix('ovos-a2a: ')}")


def main(argv: list[str] | None = None) -> int:
    """``python -m ovos_a2a_solver.bridge``."""
    parser = argparse.ArgumentParser(prog="python -m ovos_a2a_solver.bridge")
    add_arguments(parser)
    return run(parser.parse_args(argv))
