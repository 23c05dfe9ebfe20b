# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a``: talk to A2A agents, publish a persona as one, or run the demo.

    ovos-a2a discover URL            the agent's card, readable (--json: the raw card)
    ovos-a2a send URL TEXT           one turn (- or --file: the text from stdin or a file;
                                     --stream: text as it arrives; Ctrl-C cancels the task)
    ovos-a2a status URL TASK_ID      a task as the agent has it now
    ovos-a2a cancel URL TASK_ID      ask the agent to cancel a task
    ovos-a2a tasks URL               the caller's tasks, newest first (--context, --state, pages)
    ovos-a2a chat URL                a conversation in the terminal
    ovos-a2a serve                   the bridge: publish an OVOS persona as an A2A agent
    ovos-a2a demo                    all of it, end to end, on this machine

URL is ``http(s)://host:port/path`` or ``host:port/path`` (http on loopback, https elsewhere).
On a terminal ``send`` shows its wait on stderr, in place; on a pipe it prints only the answer.
Output cut off by a closed pipe (``| head``) ends quietly, with status 141.

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
import time
import uuid

from ovos_a2a_solver._defaults import DEFAULT_TIMEOUT
from ovos_a2a_solver.bridge.config import is_loopback
from ovos_a2a_solver.bridge.process.command import add_arguments as add_serve_arguments
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


def oauth2_credentials(args, env=os.environ):
    """``(Credentials or None, token origins)`` from ``--oauth2-client``, ``--oauth2-secret``
    (or ``A2A_CLIENT_OAUTH2_SECRET``) and ``--oauth2-token-origin``, for the URL on the
    command line: sent when its card requires an OAuth2 client-credentials flow."""
    from ovos_a2a_solver._auth import Credentials, token_origins_of

    client = getattr(args, "oauth2_client", None)
    secret = getattr(args, "oauth2_secret", None) or (env.get("A2A_CLIENT_OAUTH2_SECRET") if client else None)
    origins = tuple(getattr(args, "oauth2_token_origin", None) or ())
    if bool(client) != bool(secret):
        raise CommandError("--oauth2-client and --oauth2-secret (or A2A_CLIENT_OAUTH2_SECRET) go together", 2)
    try:
        token_origins_of(origins)
    except ValueError as exc:
        raise CommandError(f"--oauth2-token-origin: {str(exc).partition(': ')[2]}", 2) from None
    return (Credentials(oauth2_client_id=client, oauth2_client_secret=secret) if client else None), origins


def agent_url(raw: str) -> tuple[str, str | None]:
    """``(the URL to use, a note to show or None)`` for what was typed.

    ``localhost:8337/a2a`` and ``host:port`` are accepted: http on loopback, https
    elsewhere (the note says which). A port that is not a number from 1 to 65535 is an
    error of its own.
    """
    from urllib.parse import urlsplit

    url, note = raw.strip(), None
    if "://" not in url:
        host = urlsplit("//" + url).hostname or ""
        scheme = "http" if is_loopback(host) else "https"
        url = f"{scheme}://{url}"
        note = f"no scheme in {raw!r}: using {url}" + (" (http on loopback)" if scheme == "http" else "")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise CommandError(f"agent URL must start with http:// or https://, not {parts.scheme}://: {raw!r}", 2)
    if not parts.hostname:
        raise CommandError(f"agent URL has no host: {raw!r}", 2)
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    if parts.netloc.rpartition("@")[2].rpartition("]")[2].count(":") and not port.isdigit():
        raise CommandError(f"bad port in {raw!r}: {port!r} is not a number" if port
                           else f"bad port in {raw!r}: nothing after the colon", 2)
    if port and not 1 <= int(port) <= 65535:
        raise CommandError(f"bad port in {raw!r}: {int(port)} is not between 1 and 65535", 2)
    return url, note


def open_client(args, out: Output, conversations=None, streaming: bool = False):
    from ovos_a2a_solver.client import A2AClient

    if not getattr(args, "url_checked", False):
        args.url, note = agent_url(args.url)
        args.url_checked = True
        if note:
            out.note(note)
    auth, note = credentials_for(args.url, args)
    if note:
        out.note(note)
    oauth2, token_origins = oauth2_credentials(args)
    return A2AClient(args.url, auth_header=auth, timeout=args.timeout, streaming=streaming,
                     conversations=conversations, credentials=oauth2, oauth2_token_origins=token_origins)


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


def message_text(args) -> str:
    """The message of ``send``: the argument, stdin (``-``) or ``--file``."""
    if args.file is not None and args.text is not None:
        raise CommandError("give the message as an argument, or as --file, not both", 2)
    if args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            raise CommandError(f"cannot read --file {args.file}: {exc.strerror or exc}", 2) from None
    elif args.text == "-":
        text = sys.stdin.read()
    elif args.text is None:
        raise CommandError("what to send: give it as an argument, '-' (stdin) or --file PATH", 2)
    else:
        text = args.text
    text = text.rstrip("\n")
    if not text.strip():
        raise CommandError("the message is empty", 2)
    return text


def cmd_send(args, out: Output) -> int:
    from ovos_a2a_solver._conversations import ConversationStore

    text = message_text(args)
    store = ConversationStore.default()
    updates = []
    waiting = Waiting(sys.stderr.isatty() and not out.as_json)
    try:
        def on_update(update) -> None:
            updates.append(update)
            waiting.update(update)
            if args.stream and not out.as_json and (update.progress or update.note) and not waiting.enabled:
                print(out.dim(f"… {update.progress or update.note}"), file=sys.stderr, flush=True)

        # always streamed when the agent offers it: the task id and progress arrive while waiting
        # (for the indicator and for Ctrl-C); --stream only decides how the answer is printed
        with open_client(args, out, conversations=store, streaming=True) as client:
            if args.stream and not out.as_json and not waiting.enabled:
                print(out.dim("… working"), file=sys.stderr, flush=True)
            pieces = []
            try:
                for piece in client.stream_task(text, session_id=args.session, on_update=on_update):
                    pieces.append(piece)
                    if args.stream and not out.as_json:
                        waiting.stop()
                        print(piece, end="", flush=True)
            except KeyboardInterrupt:
                waiting.stop()
                if args.stream and pieces:
                    print()
                return _cancel_after_interrupt(client, updates, out)
            finally:
                waiting.stop()
            conversation = client.conversation(args.session)
    finally:
        waiting.stop()
    answer = "".join(pieces)
    last = updates[-1] if updates else None
    task_id = next((u.task_id for u in reversed(updates) if u.task_id), "")
    if out.as_json:
        out.json({"answer": answer, "state": last.state_name if last else "", "task_id": task_id,
                  "context_id": conversation.context_id if conversation else "",
                  "waiting_for_input": bool(conversation and conversation.task_id)})
        return 0
    if args.stream:
        print()
    else:
        out.para(answer)
    if conversation and conversation.task_id:
        out.note(f"the agent waits for your answer: ovos-a2a send {args.url} \"...\" --session {args.session}")
    elif task_id and sys.stderr.isatty():
        out.note(f"task {task_id} ({last.state_name if last else '?'})")
    return 0


def _cancel_unless_ended(client, task_id: str):
    """The task after an interrupted answer: closing the answer's stream already asked the agent
    to cancel it; if it still runs (the agent ignored that), ask once more."""
    from ovos_a2a_solver.states import TERMINAL

    task = client.get_task(task_id)
    return task if task.status.state in TERMINAL else client.cancel_task(task_id)


def _cancel_after_interrupt(client, updates, out: Output) -> int:
    """Ctrl-C during ``send``: cancel the remote task and say what the agent answered."""
    from a2a.utils.errors import A2AError
    from ovos_a2a_solver.states import state_name

    task_id = next((u.task_id for u in reversed(updates) if u.task_id), "")
    if not task_id:
        out.note("interrupted before the agent named a task: nothing to cancel")
        return 130
    try:
        task = _cancel_unless_ended(client, task_id)
    except A2AError as exc:
        out.note(f"interrupted; the agent did not cancel task {task_id}: {_one_line(exc)}")
        return 130
    except KeyboardInterrupt:
        out.note(f"interrupted; task {task_id} may still run: ovos-a2a cancel {client.base_url} {task_id}")
        return 130
    out.note(f"interrupted; the agent canceled task {task_id}: it is now {state_name(task.status.state)}")
    return 130


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


def _newest_first(tasks) -> list:
    """Newest status timestamp first; tasks without one after, in the order given."""
    stamped = [t for t in tasks if t.status.HasField("timestamp")]
    rest = [t for t in tasks if not t.status.HasField("timestamp")]
    stamped.sort(key=lambda t: (t.status.timestamp.seconds, t.status.timestamp.nanos), reverse=True)
    return stamped + rest


def cmd_tasks(args, out: Output) -> int:
    from ovos_a2a_solver.states import ACTIVE, state_from_name, state_name

    if args.state and args.state.strip().lower() == "active":
        states = sorted(ACTIVE)
        if args.page_token:
            raise CommandError("--state active merges two listings: it takes no --page-token (use --all)", 2)
    else:
        states = [state_from_name(args.state) if args.state else None]
    rows, token = [], ""
    with open_client(args, out) as client:
        for state in states:
            token = args.page_token or ""
            while True:
                page = client.list_tasks(context_id=args.context or "", state=state, page_size=args.page_size,
                                         page_token=token)
                rows.extend(page.tasks)
                token = page.next_page_token
                if not args.all or not token:
                    break
    rows = _newest_first(rows)
    if len(states) > 1:  # merged: one page of the newest, unless every page was asked for
        more = len(rows) > args.page_size and not args.all
        rows, token = (rows[:args.page_size] if not args.all else rows), ""
        if more:
            out.note(f"more tasks: --page-size {args.page_size * 2} (or --all)")
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


CHAT_HELP = """\
  /help    this list
  /new     start a new conversation ({name} forgets this one's context)
  /quit    end the chat (or Ctrl-D)
  Ctrl-C   while {name} answers: cancel that answer on the agent
  //text   send text that starts with a slash"""


def cmd_chat(args, out: Output) -> int:
    from a2a.utils.errors import A2AError

    from ovos_a2a_solver.states import state_name

    session = "chat-" + uuid.uuid4().hex[:8]
    with open_client(args, out, streaming=True) as client:
        card = client.fetch_agent_card()
        print(out.dim(f"talking to {card.name}; /help for commands, /quit or Ctrl-D ends, "
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
            command = text.strip().split()[0].lower() if text.strip().startswith("/") else ""
            if command in ("/quit", "/exit"):
                return 0
            if command == "/new":
                client.reset(session)
                print(out.dim("(new conversation)"))
                continue
            if command == "/help":
                print(CHAT_HELP.format(name=card.name))
                continue
            if command and not text.strip().startswith("//"):
                print(out.dim(f"(unknown command {command}: /help lists them; start with // to send it as text)"))
                continue
            if text.strip().startswith("//"):
                text = text.strip()[1:]
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
                        task = _cancel_unless_ended(client, current["task"])
                        print(out.dim(f"(task {task.id} on the agent: {state_name(task.status.state)})"))
                    except A2AError as exc:
                        print(out.dim(f"(the agent did not cancel: {exc})"))
            except A2AError as exc:
                print()
                out.note(f"{type(exc).__name__}: {exc}")


def cmd_demo(args, out: Output) -> int:
    from ovos_a2a_solver.demo import run_demo
    return run_demo(out, timeout=args.timeout, quiet=not args.debug)


def cmd_serve(args, out: Output) -> int:
    from ovos_a2a_solver.bridge.process.command import run
    return run(args)


# ---- the parser ----------------------------------------------------------------------------

def _client_options(p: argparse.ArgumentParser, url: bool = True) -> None:
    if url:
        p.add_argument("url", help="the agent's URL (its card is looked up under it)")
    p.add_argument("--auth", metavar="HEADER", help='credential for this URL only, e.g. "Bearer abc" or "X-API-Key: k"')
    p.add_argument("--password", help="HTTP Basic password for this URL only (user: --user, default a2a); "
                                      "or set A2A_CLIENT_PASSWORD + A2A_CLIENT_PEER_URL")
    p.add_argument("--user", help="HTTP Basic user name (default a2a, or A2A_CLIENT_USER)")
    p.add_argument("--oauth2-client", metavar="ID", help="OAuth2 client id, for a card that requires a "
                                                         "client-credentials flow (secret: --oauth2-secret)")
    p.add_argument("--oauth2-secret", metavar="SECRET", help="OAuth2 client secret (or set A2A_CLIENT_OAUTH2_SECRET)")
    p.add_argument("--oauth2-token-origin", metavar="ORIGIN", action="append",
                   help="another origin whose token endpoint may get the OAuth2 secret, e.g. "
                        "https://login.example (repeatable); the agent's own origin always may")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds for the whole call (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")


EXAMPLES = {
    "discover": "ovos-a2a discover localhost:8337/a2a\n  ovos-a2a discover https://agent.example/a2a --json",
    "send": 'ovos-a2a send localhost:8337/a2a "what is my name?" --session trip\n'
            "  ovos-a2a send localhost:8337/a2a - < question.txt      # the message from stdin\n"
            '  ovos-a2a send https://agent.example/a2a --file long.txt --stream --auth "Bearer $TOKEN"',
    "status": "ovos-a2a status localhost:8337/a2a 0f1ff863-5d2c-4d6e-9a43-8d0c6f2a4b11",
    "cancel": "ovos-a2a cancel localhost:8337/a2a 0f1ff863-5d2c-4d6e-9a43-8d0c6f2a4b11",
    "tasks": "ovos-a2a tasks localhost:8337/a2a --state active\n"
             "  ovos-a2a tasks localhost:8337/a2a --state input-required --all --json",
    "chat": "ovos-a2a chat localhost:8337/a2a      # then /help, /new, /quit; Ctrl-C cancels an answer",
    "serve": "ovos-a2a serve                                  # the embedded persona on 127.0.0.1:8337\n"
             "  ovos-a2a serve --persona ~/.config/ovos_persona/my-persona.json",
    "demo": "ovos-a2a demo",
}

#: one line each in ``ovos-a2a --help``; the first sentence of each command's own --help
SUMMARIES = {
    "discover": "show an agent's card: name, skills, interfaces, security",
    "send": "send one message and print the answer (Ctrl-C cancels it on the agent)",
    "status": "show a task as the agent has it now",
    "cancel": "ask the agent to cancel a task",
    "tasks": "list your tasks on an agent, newest first (A2A 1.0)",
    "chat": "talk to an agent in the terminal",
    "serve": "publish an OVOS persona as an A2A agent (the bridge)",
    "demo": "bridge + persona + plugin, end to end on this machine",
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

    p = _command(commands, "serve")
    add_serve_arguments(p)  # sets its own description and epilog (the environment settings)
    p.epilog = f"{p.epilog.rstrip()}\n\nexample:\n  {EXAMPLES['serve']}"
    p.set_defaults(run=cmd_serve)

    p = _command(commands, "demo")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                   help=f"seconds per turn (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    p.set_defaults(run=cmd_demo, json=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    if args.command != "serve":  # serve sets up its own logs (bridge/process/server.py)
        logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
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
            message = (_unauthorized(exc, args) or _missing_credential(exc)
                       or _one_line(exc) + _still_working_hint(exc, args))
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


def _still_working_hint(exc: BaseException, args) -> str:
    """For a task that outlived the command's timeout: how to see it later."""
    from ovos_a2a_solver._errors import StillWorkingError

    task_id = exc.task_id if isinstance(exc, StillWorkingError) else ""
    return f" (see it later: ovos-a2a status {args.url} {task_id})" if task_id and getattr(args, "url", "") else ""


def _unauthorized(exc: BaseException, args) -> str | None:
    """For an HTTP 401: a line that names the flags and the schemes the agent's card declares."""
    from ovos_a2a_solver._failures import http_status

    if http_status(exc) != 401:
        return None
    url = getattr(args, "url", "")
    schemes = ""
    try:
        from ovos_a2a_solver.client import A2AClient
        with A2AClient(url, timeout=min(5.0, getattr(args, "timeout", 5.0) or 5.0)) as client:
            declared = list(client.fetch_agent_card().security_schemes)
        schemes = f"; its card declares: {', '.join(declared)}" if declared else "; its card declares no scheme"
    except Exception:  # the card itself may need the credential
        pass
    given = getattr(args, "auth", None) or getattr(args, "password", None)
    what = "refused the credential given" if given else "wants a credential (HTTP 401)"
    return (f"{url} {what}{schemes}: pass --auth \"Bearer TOKEN\" (or \"Header-Name: value\"), "
            f"or --password for HTTP Basic (user --user, default a2a)")


def _missing_credential(exc: BaseException) -> str | None:
    """For a card whose security requirements no credential given fits: its words, and the flags."""
    from ovos_a2a_solver._errors import MissingCredentialError

    if not isinstance(exc, MissingCredentialError):
        return None
    return (f"{exc}; on the command line pass --auth \"Bearer TOKEN\" (or \"Header-Name: value\"), "
            f"--password for HTTP Basic (user --user, default a2a), or --oauth2-client and --oauth2-secret for "
            f"OAuth2 client credentials (--oauth2-token-origin for a token endpoint on another origin)")


def _one_line(exc: BaseException) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    name = type(exc).__name__
    return message if isinstance(exc, (CommandError, ValueError)) else f"{name}: {message}"


if __name__ == "__main__":
    sys.exit(main())
