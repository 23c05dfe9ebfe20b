# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The commands: ``discover``, ``send``, ``status``, ``cancel``, ``tasks``, ``chat``, ``serve``
and ``demo``, each ``cmd_NAME(args, out) -> exit status``."""
from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading
import uuid
from collections.abc import Callable

from ovos_a2a_solver.cli.agents import looks_like_url, open_client
from ovos_a2a_solver.cli.failures import one_line
from ovos_a2a_solver.cli.output import CommandError, Output, Waiting
from ovos_a2a_solver.cli.signing_in import SignInSteps, answer_after_sign_in


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
    from ovos_a2a_solver.agent.exceptions import SignInError, SignInPendingError
    from ovos_a2a_solver.conversations.conversation_store import ConversationStore

    if args.text not in (None, "-") and looks_like_url(args.text) and not looks_like_url(args.url):
        raise CommandError(f"the agent's URL comes first: ovos-a2a send {args.text} {shlex.quote(args.url)}", 2)
    text = message_text(args)
    store = ConversationStore.default()
    updates = []
    waiting = Waiting(sys.stderr.isatty() and not out.as_json)
    signing_in = SignInSteps(out)
    try:
        def on_update(update) -> None:
            updates.append(update)
            waiting.update(update)
            if args.stream and not out.as_json and (update.progress or update.note) and not waiting.enabled:
                print(out.dim(f"… {update.progress or update.note}"), file=sys.stderr, flush=True)

        # streamed when the agent offers it (unless --no-stream): the task id and progress arrive while
        # waiting (for the indicator and for Ctrl-C); --stream only decides how the answer is printed
        with open_client(args, out, conversations=store, streaming=True, on_sign_in=signing_in) as client:
            earlier = take_earlier_answer(client, args.session)
            if earlier is not None and earlier["asks"]:  # its question first: this message would answer it
                waiting.stop()
                return _say_earlier_question(args, out, earlier, client.conversation(args.session))
            if args.stream and not out.as_json and not waiting.enabled:
                print(out.dim("… working"), file=sys.stderr, flush=True)
            if earlier is not None and not out.as_json:
                _say_earlier(out, earlier)
            pieces = []
            task_id = lambda: next((u.task_id for u in reversed(updates) if u.task_id), "")  # noqa: E731
            try:
                with saying_cancel(out, waiting, task_id):
                    try:
                        for piece in client.stream_task(text, session_id=args.session, on_update=on_update,
                                                        blocking=args.no_stream):
                            piece = signing_in.shown(piece)  # a sign-in's prompt was told on stderr
                            if not piece:
                                continue
                            pieces.append(piece)
                            if args.stream and not out.as_json:
                                waiting.stop()
                                print(piece, end="", flush=True)
                    except SignInPendingError as pending:  # the person signs in: wait as long as the code lives
                        pieces.append(answer_after_sign_in(client, args.session, pending, signing_in))
                        if args.stream and not out.as_json:
                            waiting.stop()
                            print(pieces[-1], end="", flush=True)
                    except SignInError as ended:
                        raise CommandError(ended.said or str(ended), 1) from None
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
                  "waiting_for_input": bool(conversation and conversation.task_id),
                  "earlier_answer": _earlier_json(earlier), "sign_in": signing_in.report()})
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


#: seconds ``send`` looks for the answer of a task that outlived an earlier ``send`` of its session
EARLIER_ANSWER_LOOK = 0.05
#: the tasks searched for the one an earlier ``send``'s message started, when the agent had not named it
EARLIER_TASKS_SEARCHED = 50


def take_earlier_answer(client, session: str) -> dict | None:
    """The answer of the session's task that outlived an earlier ``send`` (its ``--timeout``
    passed), if the agent has settled it by now: ``{"answer", "task_id", "asks"}`` (``asks``:
    it is a question, which the session's next message answers). Taken here, apart from this
    message's answer, so that the two are never printed as one; ``None`` when there is none
    (or it is still working: then it stays the session's, for a later ``send``)."""
    before = client.conversation(session)
    if before is None or not (before.pending_task_id or before.pending_message_id):
        return None
    text = client.answer_when_ready(session, within=EARLIER_ANSWER_LOOK)
    if text is None:
        return None
    after = client.conversation(session)
    task_id = before.pending_task_id or (after.task_id if after and after.task_id else "") \
        or _task_of_message(client, before.context_id, before.pending_message_id)
    asks = bool(after and after.task_id and after.task_id == task_id)
    return {"answer": text, "task_id": task_id, "asks": asks}


def _task_of_message(client, context_id: str, message_id: str | None) -> str:
    """The id of the task that ``message_id`` started (among the context's newest), or ``""``."""
    if not message_id:
        return ""
    try:
        listed = client.list_tasks(context_id=context_id, page_size=EARLIER_TASKS_SEARCHED)
    except Exception:  # noqa: BLE001 - only the label of an answer already taken depends on it
        return ""
    return next((task.id for task in listed.tasks if any(m.message_id == message_id for m in task.history)), "")


def _earlier_json(earlier: dict | None) -> dict | None:
    return None if earlier is None else {"answer": earlier["answer"], "task_id": earlier["task_id"]}


def _say_earlier(out: Output, earlier: dict) -> None:
    """The earlier task's answer on stdout, on a line of its own that says whose it is."""
    label = f"earlier answer (task {earlier['task_id']}):" if earlier["task_id"] else "earlier answer:"
    out.para(f"{out.dim(label)} {earlier['answer']}")


def _say_earlier_question(args, out: Output, earlier: dict, conversation) -> int:
    """The earlier task asks a question: it is said, and this message is not sent (it would
    be taken as the answer to a question the user has not seen)."""
    if out.as_json:
        out.json({"answer": "", "state": "", "task_id": "",
                  "context_id": conversation.context_id if conversation else "",
                  "waiting_for_input": True, "earlier_answer": _earlier_json(earlier), "sent": False})
        return 0
    _say_earlier(out, earlier)
    out.note(f"your message was not sent: the earlier task asks this first; answer it: "
             f"ovos-a2a send {args.url} \"...\" --session {args.session}")
    return 0


@contextlib.contextmanager
def saying_cancel(out: Output, waiting: Waiting | None, task_id: Callable[[], str]):
    """While an answer streams: Ctrl-C says at once that the task is being cancelled (the wait
    line wiped first), then interrupts as usual; a second Ctrl-C interrupts the cancelling."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupted(_sig, _frame) -> None:
        signal.signal(signal.SIGINT, previous)
        if waiting is not None:
            waiting.stop()
        known = task_id()
        out.note(f"cancelling task {known}…" if known else "cancelling…")
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted_task_outcome(client, task_id: str) -> str:
    """What became of ``task_id`` after Ctrl-C ended its answer. Ending the stream asked the
    agent to cancel it (a refusal was said then, once, with the agent's reason); here the task
    is only read, to say where it stands."""
    from a2a.types import TaskState

    from ovos_a2a_solver.states import TERMINAL, state_name

    task = client.get_task(task_id)
    state = state_name(task.status.state)
    if task.status.state == TaskState.TASK_STATE_CANCELED:
        return f"the agent canceled task {task_id}"
    if task.status.state in TERMINAL:
        return f"task {task_id} is now {state}"
    return f"task {task_id} goes on at the agent ({state}); see it later: ovos-a2a status {client.base_url} {task_id}"


def _cancel_after_interrupt(client, updates, out: Output) -> int:
    """Ctrl-C during ``send``: say what became of the remote task."""
    from a2a.utils.errors import A2AError

    task_id = next((u.task_id for u in reversed(updates) if u.task_id), "")
    if not task_id:
        out.note("interrupted before the agent named a task: nothing to cancel")
        return 130
    try:
        out.note(interrupted_task_outcome(client, task_id))
    except A2AError as exc:
        out.note(f"interrupted; task {task_id} could not be read: {one_line(exc)}")
    except KeyboardInterrupt:
        out.note(f"interrupted; task {task_id} may still run: ovos-a2a cancel {client.base_url} {task_id}")
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
    task_id = _task_id(args, "status")
    with open_client(args, out) as client:
        return _show_task(client.get_task(task_id), out)


def cmd_cancel(args, out: Output) -> int:
    task_id = _task_id(args, "cancel")
    with open_client(args, out) as client:
        return _show_task(client.cancel_task(task_id), out)


def _task_id(args, command: str) -> str:
    """The task id given, refused here when it is empty (the agent would be asked for nothing)."""
    task_id = (args.task_id or "").strip()
    if not task_id:
        raise CommandError(f"no task id given: ovos-a2a {command} URL TASK_ID (ovos-a2a tasks URL lists them)", 2)
    return task_id


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


#: lines of ``chat`` input kept between runs (arrow up brings them back)
CHAT_HISTORY_LINES = 1000


@contextlib.contextmanager
def line_editing():
    """On a terminal: ``chat``'s input with line editing and a history kept between runs, in
    ``$XDG_STATE_HOME/ovos_a2a_solver/chat_history`` (the standard library's ``readline``)."""
    try:
        if not sys.stdin.isatty():
            raise ImportError
        import readline
    except ImportError:  # a pipe, or a Python without readline: plain input
        yield
        return
    from ovos_a2a_solver.local_state import open_private_file, package_state_dir, private_dir

    history = package_state_dir() / "chat_history"
    try:
        readline.read_history_file(history)
    except OSError:  # none yet
        pass
    readline.set_history_length(CHAT_HISTORY_LINES)
    try:
        yield
    finally:
        try:
            private_dir(history.parent)
            os.close(open_private_file(history))  # 0600 before readline writes the lines said in it
            readline.write_history_file(history)
        except OSError:
            pass


def cmd_chat(args, out: Output) -> int:
    with line_editing():
        return _chat(args, out)


def _chat(args, out: Output) -> int:
    from a2a.utils.errors import A2AError

    session = "chat-" + uuid.uuid4().hex[:8]
    # readline counts the prompt's width without its colour codes when they are marked (\001 … \002)
    prompt = out.bold("you> ").replace("\033[1m", "\001\033[1m\002").replace("\033[0m", "\001\033[0m\002")
    from ovos_a2a_solver.agent.exceptions import SignInError, SignInPendingError

    signing_in = SignInSteps(out)
    with open_client(args, out, streaming=True, on_sign_in=signing_in) as client:
        card = client.fetch_agent_card()
        print(out.dim(f"talking to {card.name}; /help for commands, /quit or Ctrl-D ends, "
                      f"Ctrl-C cancels the answer in progress"))
        while True:
            try:
                text = input(prompt)
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
                with saying_cancel(out, None, lambda: current.get("task", "")):
                    try:
                        for piece in client.stream_task(text, session_id=session,
                                                        on_update=lambda u: current.update(task=u.task_id)):
                            print(signing_in.shown(piece), end="", flush=True)  # a prompt: told on stderr
                    except SignInPendingError as pending:  # the person signs in: wait as long as the code lives
                        print(answer_after_sign_in(client, session, pending, signing_in), end="", flush=True)
                print()
            except KeyboardInterrupt:
                print()
                if current.get("task"):
                    try:
                        print(out.dim(f"({interrupted_task_outcome(client, current['task'])})"))
                    except A2AError as exc:
                        print(out.dim(f"(task {current['task']} could not be read: {exc})"))
            except SignInError as ended:
                print()
                out.note(ended.said or str(ended))
            except CommandError as exc:
                print()
                out.note(str(exc))
            except A2AError as exc:
                print()
                out.note(f"{type(exc).__name__}: {exc}")


def cmd_health(args, out: Output) -> int:
    """0 when the agent serves: a bridge's ``/health`` says ok, or another agent's card can be
    read; 1 otherwise (for scripts, service managers and container health checks)."""
    import httpx
    from urllib.parse import urlsplit

    from ovos_a2a_solver.cli.agents import agent_url

    args.url, note = agent_url(args.url)
    args.url_checked = True
    if note and not out.as_json:
        out.note(note)
    parts = urlsplit(args.url)
    with httpx.Client(timeout=args.timeout) as http:
        response = http.get(f"{parts.scheme}://{parts.netloc}/health")
    report = _json_object(response)
    if response.status_code in (200, 503) and "ok" in report:
        if out.as_json:
            out.json(report)
        else:
            verdict = "healthy" if report.get("ok") else "unhealthy"
            backend = (report.get("backend") or {}).get("state", "?")
            print(f"{verdict}: persona {report.get('persona', '?')}, store {report.get('store', '?')}, "
                  f"{report.get('running', 0)} running, {'accepting' if report.get('accepting') else 'not accepting'}"
                  f" messages, backend {backend}")
        return 0 if report.get("ok") and response.status_code == 200 else 1
    with open_client(args, out) as client:  # not a bridge: an agent that serves its card is up
        card = client.fetch_agent_card()
    if out.as_json:
        out.json({"ok": True, "agent": card.name, "health": "no /health endpoint; the card was read"})
    else:
        print(f"healthy: {card.name} serves its card (it has no /health endpoint)")
    return 0


def _json_object(response) -> dict:
    try:
        value = response.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def cmd_demo(args, out: Output) -> int:
    from ovos_a2a_solver.demo import run_demo
    return run_demo(out, timeout=args.timeout, quiet=not args.debug)


def cmd_serve(args, out: Output) -> int:
    from ovos_a2a_solver.bridge.process.command import run
    return run(args)
