# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a``: the command line; talk to A2A agents, publish a persona as one, or run the demo.

    ovos-a2a discover URL            the agent's card, readable (--json: the raw card)
    ovos-a2a send URL TEXT           one turn (- or --file: the text from stdin or a file;
                                     --stream: text as it arrives; --no-stream: one blocking
                                     SendMessage; Ctrl-C cancels the task)
    ovos-a2a status URL TASK_ID      a task as the agent has it now
    ovos-a2a cancel URL TASK_ID      ask the agent to cancel a task
    ovos-a2a tasks URL               the caller's tasks, newest first (--context, --state, pages)
    ovos-a2a chat URL                a conversation in the terminal
    ovos-a2a health URL              exit status 0 when the agent (or bridge) serves, 1 when not
    ovos-a2a serve                   the bridge: publish an OVOS persona as an A2A agent
    ovos-a2a store check             a bridge's tasks that cannot be read (--move-aside)
    ovos-a2a demo                    all of it, end to end, on this machine
    ovos-a2a completion bash|zsh     a shell completion script

URL is ``http(s)://host:port/path`` or ``host:port/path`` (http on loopback, https elsewhere).
On a terminal ``send`` shows its wait on stderr, in place; on a pipe it prints only the answer.
Output cut off by a closed pipe (``| head``) ends quietly, with status 141.

Start-up is cheap: ``--help`` loads neither the a2a-sdk, gRPC nor ovos-persona; each
command imports what it needs. Errors are one line (``--debug`` shows the traceback).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from ovos_a2a_solver._defaults import DEFAULT_TIMEOUT
from ovos_a2a_solver.bridge.process.command import add_arguments as add_serve_arguments
from ovos_a2a_solver.cli.agents import agent_url, credentials_for
from ovos_a2a_solver.cli.commands import (cmd_cancel, cmd_chat, cmd_demo, cmd_discover, cmd_health, cmd_send,
                                          cmd_serve, cmd_status, cmd_tasks)
from ovos_a2a_solver.cli.failures import (missing_credential, no_answer, one_line, still_working_hint, unauthorized,
                                          unknown_task, unreachable)
from ovos_a2a_solver.cli.output import CommandError, NoteHandler, Output
from ovos_a2a_solver.cli.signing_in import cmd_sign_out
from ovos_a2a_solver.cli.store import add_store_arguments
from ovos_a2a_solver.version import __version__

__all__ = ["main", "build_parser", "agent_url", "credentials_for"]


def _client_options(p: argparse.ArgumentParser, url: bool = True) -> None:
    if url:
        p.add_argument("url", help="the agent's URL (its card is looked up under it)")
    p.add_argument("--auth", metavar="HEADER", help='credential for this URL only, e.g. "Bearer abc" or "X-API-Key: k"; '
                                                    "or set A2A_CLIENT_AUTH + A2A_CLIENT_PEER_URL, out of sight of "
                                                    "the machine's other users (ps shows flags)")
    p.add_argument("--password", help="HTTP Basic password for this URL only (user: --user, default a2a); "
                                      "or set A2A_CLIENT_PASSWORD + A2A_CLIENT_PEER_URL (ps shows flags)")
    p.add_argument("--user", help="HTTP Basic user name (default a2a, or A2A_CLIENT_USER)")
    p.add_argument("--oauth2-client", metavar="ID", help="OAuth2 client id, for a card that requires a "
                                                         "client-credentials flow (secret: --oauth2-secret), or "
                                                         "that signs you in on another device (device code)")
    p.add_argument("--oauth2-secret", metavar="SECRET", help="OAuth2 client secret; or set A2A_CLIENT_OAUTH2_SECRET "
                                                             "(ps shows flags)")
    p.add_argument("--oauth2-token-origin", metavar="ORIGIN", action="append",
                   help="another origin whose token endpoint may get the OAuth2 secret, or your sign-in's codes "
                        "and tokens, e.g. https://login.example (repeatable); the agent's own origin always may")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds for the whole call (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show the raw requests and responses on stderr (credentials hidden)")


EXAMPLES = {
    "discover": "ovos-a2a discover localhost:8337/a2a\n  ovos-a2a discover https://agent.example/a2a --json",
    "send": 'ovos-a2a send localhost:8337/a2a "what is my name?" --session trip\n'
            "  ovos-a2a send localhost:8337/a2a - < question.txt      # the message from stdin\n"
            '  A2A_CLIENT_AUTH="Bearer $TOKEN" A2A_CLIENT_PEER_URL=https://agent.example \\\n'
            "      ovos-a2a send https://agent.example/a2a --file long.txt --stream",
    "status": "ovos-a2a status localhost:8337/a2a 0f1ff863-5d2c-4d6e-9a43-8d0c6f2a4b11",
    "cancel": "ovos-a2a cancel localhost:8337/a2a 0f1ff863-5d2c-4d6e-9a43-8d0c6f2a4b11",
    "tasks": "ovos-a2a tasks localhost:8337/a2a --state active\n"
             "  ovos-a2a tasks localhost:8337/a2a --state input-required --all --json",
    "chat": "ovos-a2a chat localhost:8337/a2a      # then /help, /new, /quit; Ctrl-C cancels an answer",
    "health": "ovos-a2a health localhost:8337/a2a || systemctl restart ovos-a2a",
    "sign-out": "ovos-a2a sign-out https://calendar.example/a2a --session kitchen --oauth2-client ovos-kitchen",
    "serve": "ovos-a2a serve                                  # the embedded persona on 127.0.0.1:8337\n"
             "  ovos-a2a serve --persona ~/.config/ovos_persona/my-persona.json",
    "store": "ovos-a2a store check --persona ~/.config/ovos_persona/my-persona.json --move-aside",
    "demo": "ovos-a2a demo",
    "completion": 'eval "$(ovos-a2a completion bash)"      # in ~/.bashrc (zsh: completion zsh, in ~/.zshrc)',
}


#: one line each in ``ovos-a2a --help``; the first sentence of each command's own --help
SUMMARIES = {
    "discover": "show an agent's card: name, skills, interfaces, security",
    "send": "send one message and print the answer (Ctrl-C cancels it on the agent)",
    "status": "show a task as the agent has it now",
    "cancel": "ask the agent to cancel a task",
    "tasks": "list your tasks on an agent, newest first (A2A 1.0)",
    "chat": "talk to an agent in the terminal",
    "health": "check that an agent or bridge serves (exit status 0, else 1)",
    "sign-out": "forget (and revoke) what a session signed in for with an agent",
    "serve": "publish an OVOS persona as an A2A agent (the bridge)",
    "store": "check a bridge's task store: tasks that cannot be read",
    "demo": "bridge + persona + plugin, end to end on this machine",
    "completion": "print a completion script for bash or zsh",
}


def _command(commands, name: str) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=SUMMARIES[name], description=SUMMARIES[name][0].upper() +
                               SUMMARIES[name][1:] + ".", epilog="example:\n  " + EXAMPLES[name],
                               formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ovos-a2a", description="OpenVoiceOS and the Agent2Agent (A2A) protocol.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="URL: http://host:port/path, or host:port/path (http on loopback, "
                                            "https elsewhere).\nRun 'ovos-a2a demo' to see it all work on this "
                                            "machine; 'ovos-a2a COMMAND --help' for an example.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = _command(commands, "discover")
    _client_options(p)
    p.set_defaults(run=cmd_discover)

    p = _command(commands, "send")
    _client_options(p)
    p.add_argument("text", nargs="?", help="what to say; - reads it from stdin")
    p.add_argument("--file", metavar="PATH", help="read what to say from this file")
    p.add_argument("--session", default="cli", help="conversation name, shared with the plugin's store (default cli)")
    p.add_argument("--stream", action="store_true", help="print the answer as it arrives")
    p.add_argument("--no-stream", action="store_true",
                   help="ask with one blocking SendMessage, even when the agent offers streaming")
    p.set_defaults(run=cmd_send)

    for name, run in (("status", cmd_status), ("cancel", cmd_cancel)):
        p = _command(commands, name)
        _client_options(p)
        p.add_argument("task_id", help="the task's id (send prints it on a terminal, and in --json)")
        p.set_defaults(run=run)

    p = _command(commands, "tasks")
    _client_options(p)
    p.add_argument("--context", help="only this contextId")
    p.add_argument("--state", metavar="STATE", help="only tasks in this state: submitted, working, completed, failed, "
                                                     "canceled, input-required, rejected, auth-required; or active "
                                                     "(submitted or working)")
    p.add_argument("--page-size", type=int, default=20, help="tasks per page (default 20, at most 100)")
    p.add_argument("--page-token", help="continue from this page")
    p.add_argument("--all", action="store_true", help="walk every page")
    p.set_defaults(run=cmd_tasks)

    p = _command(commands, "chat")
    _client_options(p)
    p.set_defaults(run=cmd_chat)

    p = _command(commands, "health")
    _client_options(p)
    p.set_defaults(run=cmd_health)

    p = _command(commands, "sign-out")
    _client_options(p)
    p.add_argument("--session", default="cli", help="whose sign-in: the conversation name (default cli; the "
                                                    "persona's sessions: default, or a satellite's)")
    p.add_argument("--all", action="store_true", help="every session's sign-ins with this agent")
    p.set_defaults(run=cmd_sign_out)

    p = _command(commands, "serve")
    add_serve_arguments(p)  # sets its own description and epilog (the environment settings)
    p.epilog = f"{p.epilog.rstrip()}\n\nexample:\n  {EXAMPLES['serve']}"
    p.set_defaults(run=cmd_serve)

    add_store_arguments(_command(commands, "store"))

    p = _command(commands, "demo")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds per turn (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    p.set_defaults(run=cmd_demo, json=False)

    p = _command(commands, "completion")
    p.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    p.set_defaults(run=_completion, json=False)
    return parser


def _completion(args, out: Output) -> int:
    from ovos_a2a_solver.cli.completion import script

    print(script(build_parser(), args.shell), end="")
    return 0


def show_the_wire() -> None:
    """``-v``: the raw exchange with the agent on stderr, as it goes (``_wire_log``)."""
    wire = logging.getLogger("ovos_a2a_solver.wire")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    wire.addHandler(handler)
    wire.setLevel(logging.DEBUG)
    wire.propagate = False


def unknown_command(argv: list[str]) -> str | None:
    """For a first word that is no command: a line with the nearest one, if any."""
    import difflib

    word = argv[0] if argv else ""
    if not word or word.startswith("-") or word in SUMMARIES:
        return None
    near = difflib.get_close_matches(word, list(SUMMARIES), n=1)
    hint = f"; did you mean '{near[0]}'?" if near else ""
    return f"unknown command '{word}'{hint} ('ovos-a2a --help' lists them)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    unknown = unknown_command(argv)
    if unknown:
        print(f"ovos-a2a: {unknown}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    if args.command != "serve" and debug:  # serve sets up its own logs (bridge/process/command.py)
        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    elif args.command != "serve":  # warnings as notes, never over the wait line
        logging.basicConfig(level=logging.WARNING, handlers=[NoteHandler()])
    if getattr(args, "verbose", False):
        show_the_wire()
    out = Output(as_json=getattr(args, "json", False))
    try:
        try:
            status = args.run(args, out) or 0
            sys.stdout.flush()
            return status
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 130
        except BrokenPipeError:
            raise
        except Exception as exc:  # every failure ends as one readable line (the traceback with --debug)
            if debug:
                raise
            message = (unauthorized(exc, args) or missing_credential(exc) or unreachable(exc, args)
                       or unknown_task(exc, args) or no_answer(exc) or one_line(exc) + still_working_hint(exc, args))
            print(f"ovos-a2a: {message}", file=sys.stderr)
            return exc.status if isinstance(exc, CommandError) else (2 if isinstance(exc, ValueError) else 1)
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as Unix tools do
        _silence_stdout()
        return 141


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit raises no second BrokenPipeError."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
