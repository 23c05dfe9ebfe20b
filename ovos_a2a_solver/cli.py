# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a``: talk to A2A agents, publish a persona as one, or run the demo.

    ovos-a2a discover URL            the agent's card, readable (--json: the raw card)
    ovos-a2a send URL TEXT           one turn (--stream: text as it arrives)
    ovos-a2a status URL TASK_ID      a task as the agent has it now
    ovos-a2a cancel URL TASK_ID      ask the agent to cancel a task
    ovos-a2a tasks URL               the caller's tasks (--context, --state, pages)
    ovos-a2a chat URL                a conversation in the terminal
    ovos-a2a serve                   the bridge: publish an OVOS persona as an A2A agent
    ovos-a2a demo                    all of it, end to end, on this machine

Start-up is cheap: ``--help`` loads neither the a2a-sdk, gRPC nor ovos-persona; each
command imports what it needs. Errors are one line (``--debug`` shows the traceback).
"""
from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import shutil
import sys
import textwrap
import uuid

from ovos_a2a_solver.bridge.command import add_arguments as add_serve_arguments
from ovos_a2a_solver._settings import DEFAULT_TIMEOUT
from ovos_a2a_solver.version import __version__


class CommandError(Exception):
    """A failure to report in one line, with an exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# ---- output --------------------------------------------------------------------------------

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


# ---- credentials ---------------------------------------------------------------------------

def basic_header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def credentials_for(url: str, args, env=os.environ) -> tuple[str | None, str | None]:
    """``(auth header or None, a note to show)`` for contacting ``url``.

    ``--auth`` and ``--password`` are for the URL on the command line. The environment's
    ``A2A_CLIENT_PASSWORD`` goes only to the origin of ``A2A_CLIENT_PEER_URL``: any other
    agent is contacted anonymously, and the note says so.
    """
    from ovos_a2a_solver._auth import origin_of

    user = getattr(args, "user", None) or env.get("A2A_CLIENT_USER") or "a2a"
    if getattr(args, "auth", None):
        return args.auth, None
    if getattr(args, "password", None):
        return basic_header(user, args.password), None
    password, peer = env.get("A2A_CLIENT_PASSWORD"), env.get("A2A_CLIENT_PEER_URL")
    if not password:
        return None, None
    target = origin_of(url)
    if peer and target is not None and origin_of(peer) == target:
        return basic_header(user, password), None
    where = f"{target[0]}://{target[1]}:{target[2]}" if target else url
    if not peer:
        return None, f"A2A_CLIENT_PASSWORD is set but A2A_CLIENT_PEER_URL is not: contacting {where} anonymously"
    return None, f"A2A_CLIENT_PASSWORD is only for {peer}: contacting {where} anonymously"


def open_client(args, out: Output, conversations=None, streaming: bool = False):
    from ovos_a2a_solver.client import A2AClient

    auth, note = credentials_for(args.url, args)
    if note:
        out.note(note)
    return A2AClient(args.url, auth_header=auth, timeout=args.timeout, streaming=streaming,
                     conversations=conversations)


# ---- commands ------------------------------------------------------------------------------

def cmd_discover(args, out: Output) -> int:
    with open_client(args, out) as client:
        card = client.fetch_agent_card()
    if out.as_json:
        from google.protobuf.json_format import MessageToDict
        out.json(MessageToDict(card.proto))
        return 0
    print(f"{out.bold(card.name)}  {out.dim('version ' + card.version) if card.version else ''}".rstrip())
    out.para(card.description, "  ")
    print(out.bold("interfaces"))
    for interface in card.interfaces:
        tenant = f"  tenant {interface.tenant}" if interface.tenant else ""
        print(f"  {interface.binding:<9} A2A {interface.protocol_version or '?':<4} {interface.url}{tenant}")
    caps = [name for name, on in (("streaming", card.streaming), ("push notifications", card.push_notifications))
            if on]
    print(f"{out.bold('capabilities')}  {', '.join(caps) or 'none'}")
    print(f"{out.bold('security')}  {', '.join(card.security_schemes) or 'none (anonymous)'}")
    print(out.bold("skills"))
    for skill in card.skills:
        print(f"  {out.bold(skill.name or skill.id)}" + (f"  {out.dim('[' + ', '.join(skill.tags) + ']')}"
                                                          if skill.tags else ""))
        if skill.description:
            out.para(skill.description, "    ")
        for example in skill.examples:
            out.para(f'e.g. "{example}"', "    ")
    return 0


def cmd_send(args, out: Output) -> int:
    from ovos_a2a_solver._conversations import ConversationStore

    store = ConversationStore.default()
    updates = []

    def on_update(update) -> None:
        updates.append(update)
        if args.stream and not out.as_json and update.progress:
            print(out.dim(f"… {update.progress}"), file=sys.stderr, flush=True)

    with open_client(args, out, conversations=store, streaming=args.stream) as client:
        if args.stream and not out.as_json:
            print(out.dim("… working"), file=sys.stderr, flush=True)
        pieces = []
        for piece in client.stream_task(args.text, session_id=args.session, on_update=on_update):
            pieces.append(piece)
            if args.stream and not out.as_json:
                print(piece, end="", flush=True)
        conversation = client.conversation(args.session)
    answer = "".join(pieces)
    last = updates[-1] if updates else None
    if out.as_json:
        out.json({"answer": answer, "state": last.state if last else "", "task_id": last.task_id if last else "",
                  "context_id": conversation.context_id if conversation else "",
                  "waiting_for_input": bool(conversation and conversation.task_id)})
        return 0
    if args.stream:
        print()
    else:
        out.para(answer)
    if conversation and conversation.task_id:
        out.note(f"the agent waits for your answer: ovos-a2a send {args.url} \"...\" --session {args.session}")
    return 0


def _task_summary(task, out: Output) -> None:
    from ovos_a2a_solver.states import state_name

    state = state_name(task.status.state)
    print(f"{out.bold('task')}     {task.id}")
    print(f"{out.bold('context')}  {task.context_id}")
    print(f"{out.bold('state')}    {state}")
    if task.status.HasField("message"):
        text = "".join(p.text for p in task.status.message.parts if p.WhichOneof("content") == "text")
        if text:
            out.para(f"status: {text}", "  ")
    answer = "".join(p.text for a in task.artifacts for p in a.parts if p.WhichOneof("content") == "text")
    if answer:
        print(out.bold("answer"))
        out.para(answer, "  ")


def _show_task(task, out: Output) -> int:
    if out.as_json:
        from google.protobuf.json_format import MessageToDict
        out.json(MessageToDict(task))
    else:
        _task_summary(task, out)
    return 0


def cmd_status(args, out: Output) -> int:
    with open_client(args, out) as client:
        return _show_task(client.get_task(args.task_id), out)


def cmd_cancel(args, out: Output) -> int:
    with open_client(args, out) as client:
        return _show_task(client.cancel_task(args.task_id), out)


def cmd_tasks(args, out: Output) -> int:
    from ovos_a2a_solver.states import state_from_name, state_name

    state = state_from_name(args.state) if args.state else None
    rows, token = [], args.page_token or ""
    with open_client(args, out) as client:
        while True:
            page = client.list_tasks(context_id=args.context or "", state=state, page_size=args.page_size,
                                     page_token=token)
            rows.extend(page.tasks)
            token = page.next_page_token
            if not args.all or not token:
                break
    if out.as_json:
        from google.protobuf.json_format import MessageToDict
        out.json({"tasks": [MessageToDict(t) for t in rows], "next_page_token": token})
        return 0
    if not rows:
        print("no tasks")
    for task in rows:
        name = state_name(task.status.state)
        when = task.status.timestamp.ToJsonString() if task.status.HasField("timestamp") else ""
        print(f"{task.id}  {name:<14} {out.dim('context ' + task.context_id)}  {out.dim(when)}")
    if token:
        out.note(f"more tasks: --page-token {token} (or --all)")
    return 0


def cmd_chat(args, out: Output) -> int:
    from a2a.utils.errors import A2AError

    session = "chat-" + uuid.uuid4().hex[:8]
    with open_client(args, out, streaming=True) as client:
        card = client.fetch_agent_card()
        print(out.dim(f"talking to {card.name}; /new starts a new conversation, /quit or Ctrl-D ends, "
                      f"Ctrl-C cancels the answer in progress"))
        while True:
            try:
                text = input(out.bold("you> "))
            except EOFError:
                print()
                return 0
            except KeyboardInterrupt:
                print()
                return 130
            if not text.strip():
                continue
            if text.strip() == "/quit":
                return 0
            if text.strip() == "/new":
                client.reset(session)
                print(out.dim("(new conversation)"))
                continue
            current = {}
            print(out.bold(f"{card.name}> "), end="", flush=True)
            try:
                for piece in client.stream_task(text, session_id=session,
                                                on_update=lambda u: current.update(task=u.task_id)):
                    print(piece, end="", flush=True)
                print()
            except KeyboardInterrupt:
                print()
                if current.get("task"):
                    try:
                        task = client.cancel_task(current["task"])
                        print(out.dim(f"(canceled on the agent: {task.id})"))
                    except A2AError as exc:
                        print(out.dim(f"(the agent did not cancel: {exc})"))
            except A2AError as exc:
                print()
                out.note(f"{type(exc).__name__}: {exc}")


def cmd_demo(args, out: Output) -> int:
    from ovos_a2a_solver.demo import run_demo
    return run_demo(out, timeout=args.timeout, quiet=not args.debug)


def cmd_serve(args, out: Output) -> int:
    from ovos_a2a_solver.bridge.command import run
    return run(args)


# ---- the parser ----------------------------------------------------------------------------

def _client_options(p: argparse.ArgumentParser, url: bool = True) -> None:
    if url:
        p.add_argument("url", help="the agent's URL (its card is looked up under it)")
    p.add_argument("--auth", metavar="HEADER", help='credential for this URL only, e.g. "Bearer abc" or "X-API-Key: k"')
    p.add_argument("--password", help="HTTP Basic password for this URL only (user: --user, default a2a); "
                                      "or set A2A_CLIENT_PASSWORD + A2A_CLIENT_PEER_URL")
    p.add_argument("--user", help="HTTP Basic user name (default a2a, or A2A_CLIENT_USER)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds for the whole call (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ovos-a2a", description="OpenVoiceOS and the Agent2Agent (A2A) protocol.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Run 'ovos-a2a demo' to see it all work on this machine.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("discover", help="show an agent's card")
    _client_options(p)
    p.set_defaults(run=cmd_discover)

    p = commands.add_parser("send", help="send one message")
    _client_options(p)
    p.add_argument("text", help="what to say")
    p.add_argument("--session", default="cli", help="conversation name, shared with the plugin's store (default cli)")
    p.add_argument("--stream", action="store_true", help="print the answer as it arrives")
    p.set_defaults(run=cmd_send)

    for name, helptext, run in (("status", "show a task", cmd_status), ("cancel", "cancel a task", cmd_cancel)):
        p = commands.add_parser(name, help=helptext)
        _client_options(p)
        p.add_argument("task_id", help="the task's id")
        p.set_defaults(run=run)

    p = commands.add_parser("tasks", help="list your tasks on an agent (A2A 1.0)")
    _client_options(p)
    p.add_argument("--context", help="only this contextId")
    p.add_argument("--state", metavar="STATE", help="only tasks in this state: submitted, working, completed, failed, "
                                                     "canceled, input-required, rejected or auth-required")
    p.add_argument("--page-size", type=int, default=20, help="tasks per page (default 20, at most 100)")
    p.add_argument("--page-token", help="continue from this page")
    p.add_argument("--all", action="store_true", help="walk every page")
    p.set_defaults(run=cmd_tasks)

    p = commands.add_parser("chat", help="talk to an agent in the terminal")
    _client_options(p)
    p.set_defaults(run=cmd_chat)

    p = commands.add_parser("serve", help="publish an OVOS persona as an A2A agent (the bridge)")
    add_serve_arguments(p)
    p.set_defaults(run=cmd_serve)

    p = commands.add_parser("demo", help="bridge + persona + plugin, end to end on this machine")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds per turn (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    p.set_defaults(run=cmd_demo, json=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    if args.command != "serve":  # serve sets up its own logs (bridge/server.py)
        logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    out = Output(as_json=getattr(args, "json", False))
    try:
        return args.run(args, out) or 0
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except Exception as exc:  # every failure ends as one readable line (the traceback with --debug)
        if debug:
            raise
        print(f"ovos-a2a: {_one_line(exc)}", file=sys.stderr)
        return exc.status if isinstance(exc, CommandError) else (2 if isinstance(exc, ValueError) else 1)


def _one_line(exc: BaseException) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    name = type(exc).__name__
    return message if isinstance(exc, (CommandError, ValueError)) else f"{name}: {message}"


if __name__ == "__main__":
    sys.exit(main())
