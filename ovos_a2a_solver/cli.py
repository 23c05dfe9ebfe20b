# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a``: the command line.

Start-up is cheap: only the chosen command imports what it needs (``--help`` loads
neither the a2a-sdk, gRPC nor ovos-persona).
"""
from __future__ import annotations

import argparse
import logging
import sys

from ovos_a2a_solver.version import __version__


def _serve_parser(commands) -> None:
    p = commands.add_parser("serve", help="publish an OVOS persona as an A2A agent (the bridge)",
                            description="Publish an OVOS persona as a durable A2A agent. Flags win over "
                                        "OVOS_A2A_* environment variables (e.g. OVOS_A2A_PASSWORD).")
    p.add_argument("--persona", metavar="FILE.json", help="persona file (default: the embedded offline persona)")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8337; 0 picks a free one)")
    p.add_argument("--base-url", help="public URL of the A2A endpoint (default http://HOST:PORT/a2a)")
    p.add_argument("--state-dir", help="directory of the SQLite task store (default $XDG_STATE_HOME/ovos_a2a_solver/bridge)")
    p.add_argument("--db", help="SQLAlchemy URL of the task store instead, e.g. postgresql+asyncpg://user@host/db")
    p.add_argument("--name", help="agent name on the card (default: the persona's)")
    p.add_argument("--description", help="agent description on the card (default: the persona's)")
    p.add_argument("--heartbeat", type=float, help="seconds of silence before a 'still working' update (15)")
    p.add_argument("--deadline", type=float, help="seconds one message may work (3600)")
    p.add_argument("--max-concurrent", type=int, help="persona turns at once before 'busy' (8)")
    p.add_argument("--grpc-port", type=int, help="also serve gRPC on this port (0: a free one; needs the grpc extra)")
    p.add_argument("--username", help="Basic auth user name (default a2a)")
    p.add_argument("--password", help="Basic auth password (better: OVOS_A2A_PASSWORD)")
    p.add_argument("--backend", choices=["persona", "echo"], default="persona",
                   help="what answers: the persona, or an echo (for tests and benchmarks)")
    p.add_argument("--debug", action="store_true", help="verbose logs")
    p.set_defaults(run=_serve)


def _serve(args) -> int:
    from ovos_a2a_solver.bridge.config import BridgeSettings
    from ovos_a2a_solver.bridge.server import serve

    values = {k: getattr(args, k) for k in ("persona", "host", "port", "base_url", "state_dir", "db", "name",
                                            "description", "heartbeat", "deadline", "max_concurrent",
                                            "grpc_port", "username", "password")}
    settings = BridgeSettings.load(values)

    def ready(settings, bridge) -> None:
        print(f'ovos-a2a: serving "{bridge.card.name}" at {settings.public_url} '
              f"(card {settings.public_url}/.well-known/agent-card.json)", flush=True)

    serve(settings, args.backend, ready=ready)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ovos-a2a", description="OpenVoiceOS and the Agent2Agent protocol.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _serve_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if getattr(args, "debug", False) else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.run(args)
    except (ValueError, OSError) as exc:
        print(f"ovos-a2a: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
