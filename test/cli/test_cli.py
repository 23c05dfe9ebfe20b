"""The ``ovos-a2a`` command line, run as a real subprocess.

Every command runs as ``python -m ovos_a2a_solver.cli ...`` (see test/support/cli_run.py) with
its own ``XDG_STATE_HOME``, against the scripted test agents (test/support/a2a_agent.py) or the
bridge (test/support/bridge_process.py) over loopback. Independent commands of one test run side
by side to keep the file quick.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import re
import socket
import subprocess
import sys
from urllib.parse import urlsplit

import httpx
import pytest

from ovos_a2a_solver.cli import credentials_for

from support import REPO_ROOT
from support.network import free_port
from support.bridge_in_process import InProcessBridge
from support.bridge_process import READY_LINE, BridgeProcess, echo_log
from support.bridge_rpc import (answer, get_task, health, message, rpc, send as rpc_send, state, task_of,
                                wait_for_state)
from support.cli_run import COMMAND, Cli
from support.no_brain import NO_BRAIN_LINES
from support.terminal import spawn_in_terminal
from support.waiting import wait_until

COMMANDS = ("discover", "send", "status", "cancel", "tasks", "chat", "health", "sign-out", "serve", "store", "demo",
            "completion")
HEAVY_MODULES = ("a2a", "grpc", "ovos_persona", "httpx")

#: what the test agents' echo answers: ``echo[CONTEXT_ID]: TEXT``
ECHO = re.compile(r"echo\[(?P<ctx>[^\]\s]+)\]: (?P<text>[^\n]*)")
#: what the bridge's echo backend says to ``slow:N`` when nothing stops it
WHOLE_SLOW_ANSWER = "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."
#: a bridge's heartbeat, as ``send --stream`` shows it
HEARTBEAT = re.compile(r"Still working \(\d+ s\)\.")
#: one row of ``ovos-a2a tasks``: ``TASK_ID  STATE  context CONTEXT_ID  TIMESTAMP``
TASK_ROW = re.compile(r"^(?P<id>\S+)\s+(?P<state>[a-z-]+)\s+context (?P<ctx>\S+)", re.M)


# ---- fixtures and helpers ------------------------------------------------------------------

@pytest.fixture
def cli(tmp_path):
    """``ovos-a2a`` with a conversation store of this test's own."""
    return Cli(tmp_path / "state")


@pytest.fixture(scope="module")
def cli_bridge(tmp_path_factory):
    """A bridge (echo backend) for this module only, so its task list holds only our tasks;
    with a call log, so that ``hold:NAME`` turns wait for their release file beside it."""
    with InProcessBridge(call_log=echo_log(tmp_path_factory.mktemp("calls"))) as bridge:
        yield bridge


def one_line_error(result) -> str:
    """The failed command's only stderr line (checked: non-zero exit, no traceback)."""
    assert result.returncode != 0, result.report
    assert "Traceback" not in result.stderr, result.report
    lines = result.stderr_lines
    assert len(lines) == 1 and lines[0].startswith("ovos-a2a: "), result.report
    return lines[0]


def echo_answer(result) -> re.Match:
    """The echo answer a successful command printed as its whole output."""
    assert result.returncode == 0, result.report
    match = ECHO.fullmatch(result.stdout.strip())
    assert match, result.report
    return match


def task_rows(result) -> dict[str, tuple[str, str]]:
    """``{task id: (state, context id)}`` of an ``ovos-a2a tasks`` listing, in order."""
    assert result.returncode == 0, result.report
    return {m["id"]: (m["state"], m["ctx"]) for m in TASK_ROW.finditer(result.stdout)}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def authorizations(server) -> list[tuple[str, str | None]]:
    """``(path, Authorization header or None)`` of every request the test server received."""
    return [(h["path"], h["headers"].get("authorization")) for h in server.headers()]


# ---- 1. help and start-up cost -------------------------------------------------------------

def test_help_lists_all_eight_commands(cli):
    result = cli.run("--help")
    assert result.returncode == 0, result.report
    listed = re.findall(r"^\s+([a-z][a-z-]*)\s{2,}\S", result.stdout, re.M)
    assert sorted(listed) == sorted(COMMANDS), result.report


IMPORT_PROBE = """
import json, sys
from ovos_a2a_solver import cli
cli.build_parser()
exits = []
for argv in (["--help"], ["send", "--help"], ["serve", "--help"], ["store", "check", "--help"]):
    try:
        cli.main(argv)
    except SystemExit as exc:
        exits.append(exc.code)
loaded = [m for m in HEAVY if m in sys.modules]
import ovos_a2a_solver.client  # control: the probe does see a module once it is imported
print(json.dumps({"exits": exits, "loaded": loaded, "control": "a2a" in sys.modules}))
"""


def test_building_the_parser_and_help_import_no_protocol_stack():
    code = IMPORT_PROBE.replace("HEAVY", repr(HEAVY_MODULES))
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    report = json.loads(probe.stdout.strip().splitlines()[-1])
    assert report == {"exits": [0, 0, 0, 0], "loaded": [], "control": True}


# ---- 2. discover ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def discovered(agent, tmp_path_factory):
    """``discover`` of several agents, run side by side once for the tests below."""
    cli = Cli(tmp_path_factory.mktemp("state"))
    names = ("echo", "secure", "v03")
    results = cli.run_all(*(["discover", agent.agent(n)] for n in names), ["discover", agent.agent("echo"), "--json"])
    return dict(zip((*names, "echo-json"), results))


def test_discover_prints_the_card_readably(discovered, agent):
    result, url = discovered["echo"], agent.agent("echo")
    assert result.returncode == 0, result.report
    out = result.stdout
    assert out.splitlines()[0].split() == ["echo", "version", "1.0.0"], result.report
    assert "Echoes the text back" in out
    assert re.search(rf"^\s+JSONRPC\s+A2A 1\.0\s+{re.escape(url)}/$", out, re.M), result.report
    assert re.search(rf"^\s+HTTP\+JSON\s+A2A 1\.0\s+{re.escape(url)}/rest$", out, re.M), result.report
    assert re.search(r"^capabilities\s+streaming$", out, re.M), result.report
    assert re.search(r"^security\s+none \(anonymous\)$", out, re.M), result.report
    skills = out.split("\nskills\n", 1)[1]
    assert re.search(r"^\s+echo\s+\[test\]$", skills, re.M), result.report
    assert 'e.g. "hello"' in skills and 'e.g. "sleep:0.5"' in skills, result.report


def test_discover_shows_security_and_protocol_versions_as_the_card_says(discovered, agent):
    secure, v03 = discovered["secure"], discovered["v03"]
    assert secure.returncode == 0, secure.report
    assert re.search(r"^security\s+bearer$", secure.stdout, re.M), secure.report
    assert v03.returncode == 0, v03.report
    interfaces = re.findall(r"^\s+(\S+)\s+A2A (\S+)\s+(\S+)$", v03.stdout, re.M)
    assert interfaces == [("JSONRPC", "0.3", agent.agent("v03") + "/")], v03.report


def test_discover_json_prints_the_raw_card(discovered, agent):
    result, url = discovered["echo-json"], agent.agent("echo")
    assert result.returncode == 0, result.report
    card = json.loads(result.stdout)
    assert card["name"] == "echo" and card["version"] == "1.0.0"
    assert sorted((i["protocolBinding"], i["protocolVersion"], i["url"]) for i in card["supportedInterfaces"]) == [
        ("HTTP+JSON", "1.0", f"{url}/rest"), ("JSONRPC", "1.0", f"{url}/")]
    assert card["capabilities"]["streaming"] is True
    assert card["skills"][0]["examples"] == ["hello", "sleep:0.5"]


# ---- 3. send -------------------------------------------------------------------------------

def test_send_prints_the_answer(cli, agent):
    result = cli.run("send", agent.agent("echo"), "hello there")
    assert echo_answer(result)["text"] == "hello there"
    assert "working" not in result.stderr, result.report  # progress is only shown with --stream


def test_send_json_and_a_session_keeps_the_remote_conversation(cli, agent):
    url = agent.agent("echo")
    first, elsewhere = cli.run_all(["send", url, "one", "--json", "--session", "trip"],
                                   ["send", url, "elsewhere", "--json", "--session", "other"])
    second = cli.run("send", url, "two", "--json", "--session", "trip")
    replies = []
    for result, text in ((first, "one"), (elsewhere, "elsewhere"), (second, "two")):
        assert result.returncode == 0, result.report
        reply = json.loads(result.stdout)
        assert reply["state"] == "completed" and reply["waiting_for_input"] is False, result.report
        assert reply["answer"] == f"echo[{reply['context_id']}]: {text}", result.report
        assert reply["task_id"], result.report
        replies.append(reply)
    assert replies[2]["context_id"] == replies[0]["context_id"], replies
    assert replies[2]["task_id"] != replies[0]["task_id"], replies
    assert replies[1]["context_id"] != replies[0]["context_id"], replies


def test_send_to_an_agent_that_asks_back_continues_in_the_next_command(cli, agent):
    url = agent.agent("ask")
    question = cli.run("send", url, "book a table", "--session", "dinner")
    assert question.returncode == 0, question.report
    assert question.stdout.strip() == "which city?", question.report
    (note,) = question.stderr_lines
    assert "waits for your answer" in note and "--session dinner" in note, question.report

    answer = cli.run("send", url, "lisbon", "--session", "dinner")  # another process, same store
    assert answer.returncode == 0, answer.report
    assert re.fullmatch(r"continued\[[^\]\s]+\]: lisbon", answer.stdout.strip()), answer.report
    assert "waits for your answer" not in answer.stderr, answer.report


def test_send_stream_prints_the_whole_text_and_progress_on_stderr(cli, agent):
    chunks, echo = cli.run_all(["send", agent.agent("stream-chunks"), "hi", "--stream"],
                               ["send", agent.agent("echo"), "hi", "--stream"])
    assert chunks.returncode == 0, chunks.report
    assert chunks.stdout == "Hello there. How are you today? Fine.\n", chunks.report
    assert re.search(r"\bworking\b", chunks.stderr), chunks.report  # the CLI's own indicator
    assert echo_answer(echo)["text"] == "hi"
    assert "working..." in echo.stderr, echo.report  # the agent's progress message
    assert "working..." not in echo.stdout, echo.report


def test_send_reads_a_langgraph_stream_and_falls_back_to_blocking_where_no_stream_can_be_read(cli, agent):
    seen = len(agent.calls())
    langgraph, garbled = cli.run_all(["send", agent.agent("langgraph"), "hi", "--json"],
                                     ["send", agent.agent("langgraph-garbled"), "hi", "--stream"])
    assert json.loads(langgraph.stdout)["answer"] == "Hello there. How are you today? Fine.", langgraph.report
    assert garbled.stdout == "Hello there. How are you today? Fine.\n", garbled.report
    calls = agent.calls()[seen:]
    assert [c["call"] for c in calls if c["agent"] == "langgraph"] == ["SendStreamingMessage"]
    assert [c["call"] for c in calls if c["agent"] == "langgraph-garbled"] == ["SendStreamingMessage", "SendMessage"]


def test_send_no_stream_sends_one_blocking_send_message(cli, agent):
    seen = len(agent.calls())
    result = cli.run("send", agent.agent("fasta2a-stream"), "hi", "--no-stream", "--json")
    assert result.returncode == 0, result.report
    reply = json.loads(result.stdout)
    assert reply["answer"] == f"echo[{reply['context_id']}]: hi" and reply["state"] == "completed", result.report
    calls = [c["call"] for c in agent.calls()[seen:] if c["agent"] == "fasta2a-stream"]
    assert calls[0] == "SendMessage" and "SendStreamingMessage" not in calls, calls


def test_send_stream_prints_an_answer_streamed_in_status_messages_as_it_grows(cli, agent):
    """The agent holds its closing artifact (until released): the answer that came in its
    status messages is printed before it; its progress notes go to stderr."""
    pending = cli.start("send", agent.agent("status-delta"), "gated", "--stream")
    out = pending.proc.stdout.fileno()
    os.set_blocking(out, False)
    printed = []

    def read():
        try:
            printed.append(os.read(out, 4096).decode())
        except BlockingIOError:
            pass
        return "".join(printed)

    try:
        wait_until(read, "the answer on stdout before the artifact", timeout=10,
                   until=lambda text: "Have a nice day." in text)
    finally:
        agent.release()
    result = pending.result()
    assert result.returncode == 0, result.report
    assert "".join(printed) + result.stdout == "The answer is forty-two. Have a nice day.\n", result.report
    assert "Searching…" in result.stderr and "Looking it up." in result.stderr, result.report


def test_send_stream_shows_the_bridges_heartbeats_on_stderr(cli, tmp_path):
    """The turn is held (``hold:``) until a heartbeat was shown, and then let go."""
    log = echo_log(tmp_path)
    with InProcessBridge("--heartbeat", "1", call_log=log) as bridge:
        pending = cli.start("send", bridge.url, "hold:beat", "--stream", stderr_file=tmp_path / "stderr")
        try:
            wait_until(lambda: HEARTBEAT.search(pending.stderr_so_far()), "a heartbeat on stderr")
        finally:
            (log.parent / "beat").touch()
        result = pending.result()
    assert result.returncode == 0, result.report
    assert result.stdout == "echo: hold:beat\n", result.report
    assert HEARTBEAT.search(result.stderr), result.report


@pytest.fixture(scope="module")
def finished_task(agent, tmp_path_factory):
    """An echo task that completed, as ``send --json`` reported it."""
    result = Cli(tmp_path_factory.mktemp("state")).run("send", agent.agent("echo"), "hello task", "--json")
    assert result.returncode == 0, result.report
    return json.loads(result.stdout)


# Commands that must fail are independent of each other: they run side by side, once.

@pytest.fixture(scope="module")
def failures(agent, finished_task, tmp_path_factory):
    """``{name: Result}`` of commands that must fail, for the tests below."""
    nowhere = f"http://127.0.0.1:{free_port()}/echo"  # nothing listens there
    commands = {
        "nowhere": ["send", nowhere, "hi"],
        "nowhere-debug": ["send", nowhere, "hi", "--debug"],
        "fail": ["send", agent.agent("fail"), "hi"],
        "status-unknown": ["status", agent.agent("echo"), "no-such-task"],
        "cancel-unknown": ["cancel", agent.agent("echo"), "no-such-task"],
        "https-to-http": ["send", agent.agent("echo").replace("http://", "https://"), "hi"],
        "unknown-host": ["send", "https://no-such-host.invalid/a2a", "hi"],
        "swapped": ["send", "hi", agent.agent("echo")],
        "mistyped": ["snd", agent.agent("echo"), "hi"],
        "unknown-command": ["frobnicate"],
        "cancel-completed": ["cancel", agent.agent("echo"), finished_task["task_id"]],
        "tasks-v03": ["tasks", agent.agent("v03")],
        "serve-public": ["serve", "--host", "0.0.0.0", "--port", "0", "--backend", "echo",
                         "--state-dir", str(tmp_path_factory.mktemp("bridge"))],
    }
    cli = Cli(tmp_path_factory.mktemp("state"))
    # the one that waits out its timeout starts first, and the others once the agent has its message: its time-out
    # then passes while they run (started among them, it ended some 3 s after the last of them)
    stalled = agent.stats()["messages"]["stall"]
    stall = cli.start("send", agent.agent("stall"), "hi", "--timeout", "5")
    try:
        wait_until(lambda: agent.stats()["messages"]["stall"] > stalled, "the stalling agent to have the message")
        results = dict(zip(commands, cli.run_all(*commands.values())))
        results["stall"] = stall.result()
    finally:
        stall.kill()
    return results


def test_send_to_a_port_with_nothing_listening_fails_in_one_line(failures):
    plain, debug = failures["nowhere"], failures["nowhere-debug"]
    line = one_line_error(plain)
    assert line == f"ovos-a2a: nothing answers at {plain.argv[1]}: is the agent running there?", plain.report
    assert plain.stdout == "", plain.report
    assert debug.returncode != 0, debug.report
    assert "Traceback (most recent call last)" in debug.stderr, debug.report


def test_an_agent_that_fails_the_task_fails_the_command_in_one_line(failures):
    assert "the backend exploded" in one_line_error(failures["fail"])


def test_send_gives_up_after_its_timeout_in_one_line(failures, agent):
    line = one_line_error(failures["stall"])
    assert "within 5 s" in line and agent.agent("stall") in line, failures["stall"].report
    assert "still working on task" in line and f"ovos-a2a status {agent.agent('stall')}" in line, line


#: how long a send that must give up waits for its answer: its turn is held by the agent (``hold:NAME``) until the
#: command gave up, so it outlives the command's timeout whatever the machine's pace; 5 s, for the agent to have the
#: messages of the four commands started at once on a busy machine (a single command given 1 s once gave up before
#: the agent had its message, and left no task)
LATE_TIMEOUT = "5"
#: the conversations whose first turn times out: ``{case: (agent, flags of its first send)}``
LATE_CASES = {"streamed": ("echo", ()), "blocking": ("echo", ("--no-stream",)), "text": ("echo", ()),
              "asks": ("ask", ())}


def _task_sent(url: str, text: str) -> str | None:
    """The id of the agent's task whose first message is ``text`` (ListTasks, every page); None if there is none."""
    token = ""
    while True:
        listing = rpc(url, "ListTasks", {"pageSize": 100, "pageToken": token})["result"]
        for task in listing.get("tasks", []):
            first = (task.get("history") or [{}])[0]
            if (first.get("parts") or [{}])[0].get("text") == text:
                return task["id"]
        token = listing.get("nextPageToken", "")
        if not token:
            return None


@pytest.fixture(scope="module")
def timed_out(agent, tmp_path_factory):
    """``{case: (cli, url, turn, task id)}``: in a conversation store of each case's own, ``send hold:NAME
    --timeout LATE_TIMEOUT --session late``, which gave up; the four run side by side, once. Each turn is let go
    only once its command gave up, and has ended (the echo's answered, the ask's question asked) before this
    returns, so that the next ``send`` of the session finds it settled."""
    cases = {case: (Cli(tmp_path_factory.mktemp(f"late-{case}")), agent.agent(name), agent.held_work(), flags)
             for case, (name, flags) in LATE_CASES.items()}
    pending = {case: cli.start("send", url, held.text, "--timeout", LATE_TIMEOUT, "--session", "late", *flags)
               for case, (cli, url, held, flags) in cases.items()}
    try:
        results = {case: each.result() for case, each in pending.items()}
        task_ids = {}
        for case, (cli, url, held, flags) in cases.items():
            result = results[case]
            assert result.returncode != 0 and f"within {LATE_TIMEOUT} s" in result.stderr, result.report
            found = re.search(r"still working on task (\S+)", result.stderr)  # blocking: the agent had not named it
            task_ids[case] = found.group(1) if found else wait_until(lambda: _task_sent(url, held.text),
                                                                      f"the task of {held.text}")
    finally:
        for each in pending.values():
            each.kill()
        for _cli, _url, held, _flags in cases.values():
            held.release()
    for case, (cli, url, held, flags) in cases.items():
        wait_for_state(url, task_ids[case], "TASK_STATE_INPUT_REQUIRED" if case == "asks" else "TASK_STATE_COMPLETED")
    return {case: (cli, url, held.text, task_ids[case]) for case, (cli, url, held, flags) in cases.items()}


@pytest.mark.parametrize("case", ["streamed", "blocking"])
def test_send_after_one_that_timed_out_gives_the_earlier_answer_apart_with_its_own_task(timed_out, case):
    cli, url, turn, earlier_task = timed_out[case]
    result = cli.run("send", url, "hello", "--json", "--session", "late")
    assert result.returncode == 0, result.report
    reply = json.loads(result.stdout)
    assert reply["answer"] == f"echo[{reply['context_id']}]: hello", result.report
    assert reply["earlier_answer"] == {"answer": f"echo[{reply['context_id']}]: {turn}", "task_id": earlier_task}
    assert reply["task_id"] and reply["task_id"] != earlier_task, result.report
    again = json.loads(cli.run("send", url, "again", "--json", "--session", "late").stdout)
    assert again["earlier_answer"] is None and again["answer"].endswith("]: again"), again  # said once


def test_send_in_text_labels_the_earlier_answer_on_a_line_of_its_own(timed_out):
    cli, url, turn, earlier_task = timed_out["text"]
    result = cli.run("send", url, "hello", "--session", "late")
    assert result.returncode == 0, result.report
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.report
    assert re.fullmatch(rf"earlier answer \(task {earlier_task}\): echo\[[^\]]+\]: {re.escape(turn)}", lines[0]), \
        result.report
    assert ECHO.fullmatch(lines[1]).group("text") == "hello", result.report


def test_send_after_an_earlier_task_that_asks_says_the_question_and_sends_nothing(timed_out):
    cli, url, _turn, task_id = timed_out["asks"]
    asked = cli.run("send", url, "lisbon", "--session", "late")
    assert asked.returncode == 0 and asked.stdout == f"earlier answer (task {task_id}): which city?\n", asked.report
    assert "not sent" in asked.stderr, asked.report
    answered = cli.run("send", url, "lisbon", "--session", "late")
    assert answered.stdout.startswith("continued[") and answered.stdout.endswith("]: lisbon\n"), answered.report


# ---- 4. status and cancel ------------------------------------------------------------------

def test_status_shows_a_completed_task_and_its_answer(cli, agent, finished_task):
    task_id, ctx = finished_task["task_id"], finished_task["context_id"]
    result = cli.run("status", agent.agent("echo"), task_id)
    assert result.returncode == 0, result.report
    assert re.search(rf"^task\s+{re.escape(task_id)}$", result.stdout, re.M), result.report
    assert re.search(rf"^context\s+{re.escape(ctx)}$", result.stdout, re.M), result.report
    assert re.search(r"^state\s+completed$", result.stdout, re.M), result.report
    assert re.search(rf"^answer\n\s+echo\[{re.escape(ctx)}\]: hello task$", result.stdout, re.M), result.report


def test_cancel_of_a_completed_task_fails_in_one_line(failures):
    result = failures["cancel-completed"]
    assert re.search(r"TaskNotCancelable|cannot be canceled", one_line_error(result)), result.report
    assert result.stdout == "", result.report


@pytest.mark.parametrize("command", ["status", "cancel"])
def test_an_unknown_task_is_worded_alike_by_status_and_cancel(failures, agent, command):
    result = failures[f"{command}-unknown"]
    url = agent.agent("echo")
    assert one_line_error(result) == (f"ovos-a2a: {url} knows no task no-such-task (of yours): "
                                      f"ovos-a2a tasks {url} lists them"), result.report


def test_https_to_a_plain_http_agent_suggests_http(failures, agent):
    line = one_line_error(failures["https-to-http"])
    assert line.endswith(f"answers without TLS: try {agent.agent('echo')}"), failures["https-to-http"].report


def test_an_unknown_host_is_named(failures):
    line = one_line_error(failures["unknown-host"])
    assert "cannot find the host 'no-such-host.invalid'" in line and "check the URL" in line, line


def test_arguments_in_the_wrong_order_are_named_not_tried(failures, agent):
    result = failures["swapped"]
    assert one_line_error(result) == f"ovos-a2a: the agent's URL comes first: ovos-a2a send {agent.agent('echo')} hi"
    assert result.returncode == 2, result.report
    assert "https://hi" not in result.stderr, result.report  # no attempt to reach a host "hi"


def test_a_mistyped_command_gets_a_suggestion(failures):
    assert one_line_error(failures["mistyped"]) == ("ovos-a2a: unknown command 'snd'; did you mean 'send'? "
                                                    "('ovos-a2a --help' lists them)")
    assert one_line_error(failures["unknown-command"]) == ("ovos-a2a: unknown command 'frobnicate' "
                                                           "('ovos-a2a --help' lists them)")
    assert failures["mistyped"].returncode == failures["unknown-command"].returncode == 2


@pytest.mark.parametrize("command", ["status", "cancel"])
def test_an_empty_task_id_is_refused_before_anything_is_sent(cli, agent, command):
    agent.clear_headers()
    result = cli.run(command, agent.agent("echo"), "  ")
    assert result.returncode == 2 and "no task id given" in one_line_error(result), result.report
    assert [h for h in agent.headers() if h["path"].startswith("/echo")] == [], "the agent was asked"


def test_cancel_stops_a_running_task_on_the_bridge(cli, cli_bridge):
    """The turn is held until canceled (``hold:``), so it is still running however long the
    command takes to start."""
    task = task_of(rpc_send(cli_bridge.url, message("hold:cancel-me"), blocking=False))
    wait_until(lambda: health(cli_bridge)["running"] == 1, "the held turn to run")
    result = cli.run("cancel", cli_bridge.url, task["id"])
    assert result.returncode == 0, result.report
    assert re.search(rf"^task\s+{re.escape(task['id'])}$", result.stdout, re.M), result.report
    assert re.search(r"^state\s+canceled$", result.stdout, re.M), result.report
    # the persona stopped: no turn goes on behind the cancel (the slot is freed once the end is written)
    wait_until(lambda: health(cli_bridge)["running"] == 0, "the canceled turn to free its slot")
    after = task_of(get_task(cli_bridge.url, task["id"]))
    assert state(after) == "TASK_STATE_CANCELED" and "echo" not in answer(after), after


# ---- 5. tasks ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sent(cli_bridge):
    """Four turns sent to the bridge (raw JSON-RPC, to keep the file quick): two in one
    conversation, one in another, one left waiting for input. ``{name: task}``."""
    url = cli_bridge.url
    first = task_of(rpc_send(url, message("hello")))
    tasks = {"first": first,
             "follow": task_of(rpc_send(url, message("again", context_id=first["contextId"]))),
             "other": task_of(rpc_send(url, message("other"))),
             "asking": task_of(rpc_send(url, message("ask:which city?")))}
    assert [state(t) for t in tasks.values()] == ["TASK_STATE_COMPLETED"] * 3 + ["TASK_STATE_INPUT_REQUIRED"]
    assert tasks["follow"]["contextId"] == first["contextId"] != tasks["other"]["contextId"]
    return tasks


def test_tasks_lists_the_tasks_sent(cli, cli_bridge, sent):
    text, as_json = cli.run_all(["tasks", cli_bridge.url], ["tasks", cli_bridge.url, "--json"])
    rows = task_rows(text)
    for name in ("first", "follow", "other"):
        assert rows.get(sent[name]["id"]) == ("completed", sent[name]["contextId"]), text.report
    assert rows.get(sent["asking"]["id"]) == ("input-required", sent["asking"]["contextId"]), text.report
    assert as_json.returncode == 0, as_json.report
    listing = json.loads(as_json.stdout)
    assert [t["id"] for t in listing["tasks"]] == list(rows), as_json.report
    assert listing["next_page_token"] == ""


def test_tasks_filters_by_context_and_by_state(cli, cli_bridge, sent):
    ctx = sent["first"]["contextId"]
    by_context, completed = cli.run_all(["tasks", cli_bridge.url, "--context", ctx],
                                        ["tasks", cli_bridge.url, "--state", "completed"])
    assert task_rows(by_context) == {sent["first"]["id"]: ("completed", ctx),
                                     sent["follow"]["id"]: ("completed", ctx)}, by_context.report
    rows = task_rows(completed)
    assert {s for s, _ in rows.values()} == {"completed"}, completed.report
    assert {sent[n]["id"] for n in ("first", "follow", "other")} <= set(rows), completed.report
    assert sent["asking"]["id"] not in rows, completed.report


def test_tasks_walks_pages(cli, cli_bridge, sent):
    everything = [t["id"] for t in rpc(cli_bridge.url, "ListTasks", {"pageSize": 100})["result"]["tasks"]]
    assert len(everything) >= 4
    one, walked = cli.run_all(["tasks", cli_bridge.url, "--page-size", "1"],
                              ["tasks", cli_bridge.url, "--page-size", "1", "--all"])
    assert list(task_rows(one)) == everything[:1], one.report
    token = re.search(r"--page-token (\S+)", one.stderr)
    assert token, one.report
    assert list(task_rows(walked)) == everything, walked.report
    assert "--page-token" not in walked.stderr, walked.report
    following = cli.run("tasks", cli_bridge.url, "--page-size", "1", "--page-token", token[1])
    assert list(task_rows(following)) == everything[1:2], following.report


def test_tasks_on_an_a2a_0_3_agent_says_it_cannot_list(failures):
    line = one_line_error(failures["tasks-v03"])
    assert "A2A 0.3" in line and "cannot list tasks" in line


# ---- 6. chat -------------------------------------------------------------------------------

def test_chat_new_starts_a_new_conversation(cli, agent):
    result = cli.run("chat", agent.agent("echo"), input="hello\nsecond\n/new\nhello again\n/quit\n")
    assert result.returncode == 0, result.report
    contexts = {m["text"]: m["ctx"] for m in ECHO.finditer(result.stdout)}
    assert set(contexts) == {"hello", "second", "hello again"}, result.report
    assert contexts["hello"] == contexts["second"], result.report  # one conversation until /new
    assert contexts["hello again"] != contexts["hello"], result.report
    assert "(new conversation)" in result.stdout, result.report


def test_chat_ctrl_c_cancels_the_answer_on_the_agent(cli, cli_bridge):
    pexpect = pytest.importorskip("pexpect")
    child = spawn_in_terminal(COMMAND[0], [*COMMAND[1:], "chat", cli_bridge.url], env=cli.env, dimensions=(40, 120))
    try:
        child.expect_exact("you> ")
        child.sendline("slow:1")
        child.expect_exact("Sentence 1.")  # the answer is streaming
        child.sendintr()
        child.expect(r"\(the agent canceled task (\S+)\)")
        task_id = child.match.group(1)
        child.expect_exact("you> ")  # the chat goes on
        child.sendline("/quit")
        child.expect(pexpect.EOF)
        transcript = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, transcript
    status = cli.run("status", cli_bridge.url, task_id)
    assert status.returncode == 0, status.report
    assert re.search(r"^state\s+canceled$", status.stdout, re.M), status.report
    assert "Sentence 1." in status.stdout and "Sentence 5." not in status.stdout, status.report
    # the persona stopped: no turn goes on behind the cancel (the slot is freed once the end is written)
    wait_until(lambda: health(cli_bridge)["running"] == 0, "the canceled turn to free its slot")


# ---- health --------------------------------------------------------------------------------

def test_health_of_a_bridge_a_plain_agent_and_nothing(cli, cli_bridge, agent):
    bridge, plain, nothing = cli.run_all(["health", cli_bridge.url], ["health", agent.agent("echo")],
                                         ["health", f"http://127.0.0.1:{free_port()}/a2a"])
    assert bridge.returncode == 0, bridge.report
    assert bridge.stdout.startswith("healthy: persona echo, store ok, "), bridge.report
    assert plain.returncode == 0, plain.report
    assert plain.stdout.strip() == "healthy: echo serves its card (it has no /health endpoint)", plain.report
    assert one_line_error(nothing).endswith("is the agent running there?") and nothing.returncode == 1


# ---- 7. demo -------------------------------------------------------------------------------

@pytest.mark.timeout(180)
def test_demo_remembers_within_a_conversation_and_not_across(cli):
    result = cli.run("demo", timeout=120)
    assert result.returncode == 0, result.report
    out = result.stdout
    for turn in ("hello", "my name is Ada", "what is my name?"):
        assert f"you: {turn}\n" in out, result.report
    answers = re.findall(r"^(?!you: )\S[^:]*: (.+?)  \(contextId …([0-9a-f]+)\)$", out, re.M)
    assert len(answers) == 4, result.report
    assert not {text for text, _ in answers} & NO_BRAIN_LINES, result.report  # the persona, not its fallback
    assert len({ctx for _, ctx in answers[:3]}) == 1, result.report  # one remote conversation
    assert answers[2][0] == "Your name is Ada.", result.report
    assert answers[3][1] != answers[0][1], result.report  # a second remote conversation...
    assert answers[3][0] == "I do not know your name yet. Tell me by saying: my name is, then your name.", \
        result.report  # ...that does not know the name
    assert re.search(r"^ok: 3 turns in one remote conversation remembered the name", out, re.M), result.report


# ---- 8. credentials ------------------------------------------------------------------------

def test_the_env_password_goes_to_the_peer(cli, agent_pair):
    a, b = agent_pair
    a.clear_headers(), b.clear_headers()
    env = {"A2A_CLIENT_PASSWORD": "pw", "A2A_CLIENT_PEER_URL": f"{b.url}/"}
    result = cli.run("send", f"{b.url}/echo", "hi", env=env)
    assert echo_answer(result)["text"] == "hi"
    seen = authorizations(b)
    assert seen and all(auth == basic("a2a", "pw") for _, auth in seen), seen
    assert "anonymously" not in result.stderr, result.report
    assert authorizations(a) == []


def test_the_env_password_is_not_sent_to_another_agent(cli, agent_pair):
    a, b = agent_pair
    a.clear_headers(), b.clear_headers()
    env = {"A2A_CLIENT_PASSWORD": "pw", "A2A_CLIENT_PEER_URL": f"{b.url}/"}
    result = cli.run("send", f"{a.url}/echo", "hi", env=env)
    assert echo_answer(result)["text"] == "hi"
    seen = authorizations(a)
    assert seen and all(auth is None for _, auth in seen), seen
    (note,) = result.stderr_lines
    assert "anonymously" in note and a.url in note, result.report
    assert authorizations(b) == []


NO_FLAGS = argparse.Namespace(auth=None, password=None, user=None)


@pytest.mark.parametrize("peer, target", [
    ("https://agent.example", "https://agent.example:443/a2a"),
    ("https://agent.example:443/", "https://AGENT.example/a2a"),
    ("http://agent.example:80/", "http://agent.example/a2a/"),
    ("http://127.0.0.1:8337/", "http://127.0.0.1:8337/echo"),
])
def test_credentials_for_the_peer_origin_however_it_is_written(peer, target):
    env = {"A2A_CLIENT_PASSWORD": "pw", "A2A_CLIENT_PEER_URL": peer}
    assert credentials_for(target, NO_FLAGS, env=env) == (basic("a2a", "pw"), None)


@pytest.mark.parametrize("peer, target", [
    ("https://agent.example", "http://agent.example/a2a"),        # another scheme
    ("https://agent.example", "https://agent.example:8443/a2a"),  # another port
    ("https://agent.example", "https://other.example/a2a"),       # another host
    ("http://agent.example", "http://agent.example:443/a2a"),     # 443 is not http's default
])
def test_credentials_for_another_origin_are_none_with_a_note(peer, target):
    env = {"A2A_CLIENT_PASSWORD": "pw", "A2A_CLIENT_PEER_URL": peer}
    header, note = credentials_for(target, NO_FLAGS, env=env)
    assert header is None and "anonymously" in note


def test_credentials_for_without_a_peer_url_are_none_with_a_note():
    header, note = credentials_for("https://agent.example/a2a", NO_FLAGS, env={"A2A_CLIENT_PASSWORD": "pw"})
    assert header is None and "A2A_CLIENT_PEER_URL" in note and "anonymously" in note


def test_credentials_for_use_the_user_name_and_the_flags_for_the_url_itself():
    env = {"A2A_CLIENT_PASSWORD": "pw", "A2A_CLIENT_PEER_URL": "https://agent.example", "A2A_CLIENT_USER": "bob"}
    assert credentials_for("https://agent.example/a2a", NO_FLAGS, env=env) == (basic("bob", "pw"), None)
    flags = argparse.Namespace(auth=None, password="pw2", user="eve")
    assert credentials_for("https://elsewhere.example", flags, env=env) == (basic("eve", "pw2"), None)
    flags = argparse.Namespace(auth="Bearer abc", password=None, user=None)
    assert credentials_for("https://elsewhere.example", flags, env=env) == ("Bearer abc", None)


def test_auth_reaches_a_secured_agent(cli, agent):
    assert echo_answer(cli.run("send", agent.agent("secure"), "hi", "--auth", "Bearer s3cret"))["text"] == "hi"


def test_auth_never_goes_to_the_other_origin_a_card_names(cli, agent_pair):
    a, b = agent_pair
    a.clear_headers(), b.clear_headers()
    result = cli.run("send", f"{a.url}/foreign", "hi", "--auth", "Bearer s3cret")
    assert echo_answer(result)["text"] == "hi"  # answered by B's echo, where A's card points
    assert authorizations(a) == [("/foreign/.well-known/agent-card.json", "Bearer s3cret")]
    seen = authorizations(b)
    assert seen and all(auth is None for _, auth in seen), seen


# ---- 9. serve ------------------------------------------------------------------------------

def test_serve_on_a_public_address_without_credentials_refuses_in_one_line(failures):
    line = one_line_error(failures["serve-public"])
    assert "0.0.0.0" in line and "credentials" in line


#: the address the example personas and the README give the README's test agent
EXAMPLE_AGENT = "http://127.0.0.1:9999/"
#: the start-up notice of a persona whose agent shows no card
UNREACHABLE = re.compile(r'persona "(?P<name>[^"]+)" cannot reach its agent at (?P<url>\S+) \((?P<why>.*)\)')


def examples_for(agent, directory):
    """persona_examples/ copied into ``directory`` as written, but for the port: the test agent's
    instead of 9999 (which another program of this machine may hold)."""
    directory.mkdir(exist_ok=True)
    for path in sorted((REPO_ROOT / "persona_examples").glob("*.json")):
        text = path.read_text()
        (directory / path.name).write_text(text.replace(EXAMPLE_AGENT, agent.url + "/"))
    return directory


def served_personas(bridge) -> dict[str, str]:
    """{name: URL} of every ``serving`` line of the bridge's banner."""
    return {m.group("name"): m.group("url") for m in READY_LINE.finditer(bridge.stdout_text())}


def test_every_example_persona_relays_to_a_path_the_test_agent_serves(agent):
    for path in sorted((REPO_ROOT / "persona_examples").glob("*.json")):
        block = json.loads(path.read_text()).get("ovos-a2a-solver")
        if block is None:
            continue
        assert block["agent_url"].startswith(EXAMPLE_AGENT), path.name
        card = f"{agent.url}/{block['agent_url'][len(EXAMPLE_AGENT):]}/.well-known/agent-card.json"
        assert httpx.get(card, timeout=10).status_code == 200, f"{path.name}: the test agent serves no {card}"


def test_serving_the_example_personas_answers_each_of_them(agent, tmp_path, private_state):
    directory = examples_for(agent, tmp_path / "personas")
    with BridgeProcess("--personas-dir", str(directory), backend="persona", default_state_dir=True) as bridge:
        served = served_personas(bridge)
        assert len(served) == len(list(directory.glob("*.json"))), bridge.stdout_text()
        for name, url in served.items():
            task = task_of(rpc_send(url, message("hello there")))
            assert state(task) == "TASK_STATE_COMPLETED" and answer(task).strip(), (name, task)
            if name != "OVOS":  # the relays: the test agent's echo
                assert ECHO.fullmatch(answer(task)).group("text") == "hello there", (name, task)


def test_serve_says_at_start_which_personas_cannot_reach_their_agent_without_waiting_for_it(agent, tmp_path,
                                                                                               private_state):
    """Two personas as the examples were: a path the agent does not serve, a port where nothing
    listens; and one whose agent never answers, checked first: the bridge serves meanwhile."""
    directory = examples_for(agent, tmp_path / "personas")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections queue, and nothing ever answers them
        agents = {"a silent agent": f"http://127.0.0.1:{silent.getsockname()[1]}/echo",
                  "z wrong path": f"{agent.url}/a2a", "z nothing listens": f"http://127.0.0.1:{free_port()}/a2a"}
        for name, url in agents.items():
            (directory / f"{name}.json").write_text(json.dumps(
                {"name": name, "handlers": ["ovos-a2a-solver"], "ovos-a2a-solver": {"agent_url": url}}))
        with BridgeProcess("--personas-dir", str(directory), backend="persona", default_state_dir=True) as bridge:
            served = served_personas(bridge)
            task = task_of(rpc_send(served["OVOS"], message("hello")))  # served while the silent one is checked
            assert state(task) == "TASK_STATE_COMPLETED", task
            assert not UNREACHABLE.search(bridge.stderr_text()), bridge.stderr_text()
            said = wait_until(lambda: [m.groupdict() for m in UNREACHABLE.finditer(bridge.stderr_text())],
                              "a notice for each persona that cannot reach its agent", timeout=30,
                              until=lambda found: len(found) >= 3)
    assert sorted(each["name"] for each in said) == sorted(agents), said  # the examples reach theirs
    assert {each["name"]: each["url"] for each in said} == agents, said
    why = {each["name"]: each["why"] for each in said}
    assert "no answer within" in why["a silent agent"] and "404" in why["z wrong path"], why


# ---- 10. a command line as people expect one -----------------------------------------------

def spawn(cli, *argv, **env):
    """``ovos-a2a ARGV`` in a pseudo-terminal (stdout and stderr are the terminal)."""
    return spawn_in_terminal(COMMAND[0], [*COMMAND[1:], *argv], env=cli.with_env(**env), dimensions=(40, 120))


def test_every_command_has_a_one_line_summary_and_an_example(cli):
    results = cli.run_all(["--help"], *([name, "--help"] for name in COMMANDS))
    overview = results[0]
    assert overview.returncode == 0, overview.report
    for name, result in zip(COMMANDS, results[1:]):
        line = re.search(rf"^    {name}\s+(\S.*)$", overview.stdout, re.M)
        assert line, overview.report
        following = overview.stdout[line.end():].split("\n", 2)[1]
        assert not re.match(r"^\s{6,}\S", following), f"{name}: summary longer than a line\n{overview.report}"
        assert result.returncode == 0, result.report
        example = result.stdout.split("\nexample:\n", 1)
        assert len(example) == 2 and f"ovos-a2a {name}" in example[1], result.report


def test_send_reads_the_message_from_stdin_or_a_file(cli, agent, tmp_path):
    long_text = " ".join(["a long message"] * 200)
    path = tmp_path / "message.txt"
    path.write_text(long_text + "\n")
    url = agent.agent("echo")
    piped = cli.run("send", url, "-", input=long_text + "\n")
    assert echo_answer(piped)["text"] == long_text.rstrip("\n"), piped.report
    from_file, both, empty = cli.run_all(["send", url, "--file", str(path)], ["send", url, "x", "--file", str(path)],
                                         ["send", url, "--file", str(tmp_path / "missing.txt")])
    assert echo_answer(from_file)["text"] == long_text, from_file.report
    assert "not both" in one_line_error(both)
    assert "cannot read --file" in one_line_error(empty)


def test_send_accepts_host_port_urls_and_names_a_bad_port(cli, agent):
    port = urlsplit(agent.url).port
    short, bad, words = cli.run_all(["send", f"localhost:{port}/echo", "hi"],
                                    ["send", "http://127.0.0.1:99999/echo", "hi"],
                                    ["send", "127.0.0.1:eighty/echo", "hi"])
    assert echo_answer(short)["text"] == "hi"
    (note,) = short.stderr_lines
    assert f"using http://localhost:{port}/echo" in note, short.report
    assert "bad port" in one_line_error(bad) and "99999 is not between 1 and 65535" in bad.stderr, bad.report
    assert "bad port" in one_line_error(words) and "'eighty' is not a number" in words.stderr, words.report
    assert bad.returncode == 2


def test_a_url_without_a_scheme_is_https_unless_on_loopback():
    from ovos_a2a_solver.cli import agent_url

    assert agent_url("agent.example:8443/a2a")[0] == "https://agent.example:8443/a2a"
    assert agent_url("127.0.0.1:8337")[0] == "http://127.0.0.1:8337"
    assert agent_url("[::1]:8337/a2a")[0] == "http://[::1]:8337/a2a"
    assert agent_url("http://agent.example/a2a") == ("http://agent.example/a2a", None)


def test_send_on_a_pipe_prints_only_the_answer(cli, cli_bridge):
    result = cli.run("send", cli_bridge.url, "slow:0.2")
    assert result.returncode == 0 and result.stdout.strip() == WHOLE_SLOW_ANSWER, result.report
    assert result.stderr == "", result.report


def test_send_on_a_terminal_shows_the_wait_and_names_the_task(cli, cli_bridge):
    """The turn is held (``hold:``) until the wait line named its task, then let go."""
    child = spawn(cli, "send", cli_bridge.url, "hold:terminal-wait")
    try:
        child.expect(r"\r\x1b\[Kwaiting \d+ s · task (\S+)")  # overwritten in place, on the terminal
        task_id = child.match.group(1)
        (cli_bridge.call_log.parent / "terminal-wait").touch()
        child.expect_exact("echo: hold:terminal-wait")
        child.expect(rf"ovos-a2a: task {re.escape(task_id)} \(completed\)")
        child.expect(pytest.importorskip("pexpect").EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert re.search(r"^state\s+completed$", cli.run("status", cli_bridge.url, task_id).stdout, re.M)


def test_send_ctrl_c_cancels_the_task_on_the_agent(cli, cli_bridge):
    pexpect = pytest.importorskip("pexpect")
    child = spawn(cli, "send", cli_bridge.url, "slow:1")
    try:
        child.expect(r"task (\S+) · ")  # the agent named its task: cancel it now
        task_id = child.match.group(1)
        child.sendintr()
        child.expect_exact(f"cancelling task {task_id}…")  # at once, before the agent answers the cancel
        child.expect_exact(f"the agent canceled task {task_id}")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130
    after = task_of(get_task(cli_bridge.url, task_id))
    assert state(after) == "TASK_STATE_CANCELED" and answer(after) != WHOLE_SLOW_ANSWER, after
    assert health(cli_bridge)["running"] == 0


def test_send_ctrl_c_on_work_the_agent_cannot_stop_says_so_once_without_log_lines(cli, agent):
    """The agent refuses the cancel: "cancelling…" at once, the agent's refusal once, in the
    command's own words, and no log line written over the wait line."""
    pexpect = pytest.importorskip("pexpect")
    child = spawn(cli, "send", agent.agent("stubborn"), "hi")
    try:
        child.expect(r"task (\S+) · ")
        task_id = child.match.group(1)
        child.sendintr()
        child.expect_exact(f"cancelling task {task_id}…")
        child.expect(pexpect.EOF)
        after = child.before
    finally:
        child.close(force=True)
    assert child.exitstatus == 130, after
    assert after.count("this work cannot be stopped halfway") == 1, after  # the agent's reason, once
    assert not re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (ERROR|WARNING)", after), after  # no raw log line
    lines = [line for line in re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", after).replace("\r", "\n").splitlines() if line]
    assert all(line.startswith(("ovos-a2a: ", "waiting ")) for line in lines), lines
    assert re.search(rf"ovos-a2a: task {re.escape(task_id)} (goes on at the agent|is now) ", after), after


def timestamps(result) -> list[str]:
    return re.findall(r"\s(\d{4}-\d\d-\d\dT\S+Z)$", result.stdout, re.M)


def test_tasks_lists_newest_first_and_active_merges_submitted_and_working(cli, cli_bridge, sent):
    # held until canceled (hold:), so it is still running however long the commands take to start
    running = task_of(rpc_send(cli_bridge.url, message("hold:listed-active"), blocking=False))
    try:
        everything, active = cli.run_all(["tasks", cli_bridge.url, "--all"],
                                         ["tasks", cli_bridge.url, "--state", "active"])
    finally:
        cli.run("cancel", cli_bridge.url, running["id"])
    stamps = timestamps(everything)
    assert len(stamps) == len(task_rows(everything)) >= 5, everything.report
    assert stamps == sorted(stamps, reverse=True), everything.report
    rows = task_rows(active)
    assert running["id"] in rows, active.report
    assert {s for s, _ in rows.values()} <= {"submitted", "working"}, active.report
    assert timestamps(active) == sorted(timestamps(active), reverse=True), active.report


def test_tasks_with_an_unknown_state_names_the_known_ones(cli, cli_bridge):
    result = cli.run("tasks", cli_bridge.url, "--state", "sleeping")
    line = one_line_error(result)
    assert "'sleeping'" in line and "input-required" in line, result.report
    assert result.returncode == 2


def test_a_closed_pipe_ends_the_command_quietly(cli, agent):
    proc = subprocess.Popen([*COMMAND, "discover", agent.agent("echo")], env=cli.env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the command writes (| head that already ended)
    try:
        err = proc.stderr.read()
        proc.wait(60)
    finally:
        proc.kill()
    assert err == "" and proc.returncode == 141, err


def test_http_401_names_the_flags_and_the_schemes_of_the_card(cli, agent):
    wrong, undeclared = cli.run_all(["send", agent.agent("secure"), "hi", "--auth", "Bearer nope"],
                                    ["send", agent.agent("guarded"), "hi"])
    for result in (wrong, undeclared):
        line = one_line_error(result)
        assert "--auth" in line and "--password" in line, result.report
    assert "refused the credential" in wrong.stderr and "declares: bearer" in wrong.stderr, wrong.report
    assert "wants a credential" in undeclared.stderr and "declares no scheme" in undeclared.stderr, undeclared.report


def test_a_scheme_the_card_requires_without_a_credential_is_named_before_sending(cli, agent):
    agent.clear_headers()
    line = one_line_error(cli.run("send", agent.agent("secure"), "hi"))
    assert "'bearer' (HTTP bearer)" in line and "--auth" in line and "--password" in line, line
    assert [(h["method"], h["path"]) for h in agent.headers()] == [("GET", "/secure/.well-known/agent-card.json")]


def test_oauth2_client_credentials_go_to_the_token_origin_the_command_line_names(cli, agent):
    origin = agent.url.replace("127.0.0.1", "localhost")  # the agent's token endpoint, by another name
    flags = ["--oauth2-client", "client-1", "--oauth2-secret", "secret-1"]
    before = len(agent.tokens()["requests"])
    refused = one_line_error(cli.run("send", agent.agent("oauth-localhost"), "hi", *flags))
    assert f"list {origin} in oauth2_token_origins" in refused and "--oauth2-token-origin" in refused, refused
    assert len(agent.tokens()["requests"]) == before
    answer = cli.run("send", agent.agent("oauth-localhost"), "hi", *flags, "--oauth2-token-origin", origin)
    assert echo_answer(answer)["text"] == "hi"
    assert [r["client"] for r in agent.tokens()["requests"][before:]] == ["client-1"]


@pytest.mark.parametrize("flags, says", [
    (["--oauth2-secret", "s"], "--oauth2-secret (or A2A_CLIENT_OAUTH2_SECRET) needs --oauth2-client"),
    (["--oauth2-client", "c", "--oauth2-secret", "s", "--oauth2-token-origin", "login.example"],
     "--oauth2-token-origin: 'login.example' is not an http(s) origin"),
])
def test_bad_oauth2_flags_are_named(cli, agent, flags, says):
    result = cli.run("send", agent.agent("oauth"), "hi", *flags)
    assert says in one_line_error(result) and result.returncode == 2, result.report


def test_chat_handles_help_new_and_quit_itself(cli, agent):
    pexpect = pytest.importorskip("pexpect")
    agent.clear_headers()
    child = spawn(cli, "chat", agent.agent("echo"))
    try:
        child.expect_exact("you> ")
        child.sendline("/help")
        child.expect_exact("/new")
        child.expect_exact("you> ")
        child.sendline("/nonsense")
        child.expect_exact("unknown command /nonsense")
        child.expect_exact("you> ")
        child.sendline("hello")
        child.expect(ECHO)
        child.expect_exact("you> ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    sent_messages = [p for p, _ in authorizations(agent) if p.startswith("/echo") and "agent-card" not in p]
    assert len(sent_messages) == 1, sent_messages  # only "hello" reached the agent


def test_the_recording_script_writes_asciinema_casts(tmp_path):
    script = REPO_ROOT / "tools" / "record_cast.py"
    run = subprocess.run([sys.executable, str(script), "--only", "chat", "--no-svg", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = (tmp_path / "chat.cast").read_text().splitlines()
    header = json.loads(lines[0])
    assert header["version"] == 2 and header["width"] > 0 and header["height"] > 0
    events = [json.loads(line) for line in lines[1:]]
    assert all(kind == "o" for _, kind, _ in events)
    assert [t for t, _, _ in events] == sorted(t for t, _, _ in events)
    screen = "".join(text for _, _, text in events)
    assert "Your name is Ada." in screen and "/help" in screen
    # paced as a person reads: an answer stays on screen a while before the next turn, and the last
    # screen is held before a player loops
    answer = next(n for n, (_, _, text) in enumerate(events) if "Your name is Ada." in text)
    assert events[answer + 1][0] - events[answer][0] >= 0.6, events[answer:answer + 2]
    assert events[-1][0] - events[-2][0] >= 5, events[-2:]


def test_the_recordings_show_their_last_screen_where_animations_do_not_play():
    """svg-term-cli's first frame, all a static viewer shows, is an empty terminal: the script
    puts the last screen there (the animation starts at the second frame)."""
    sys.path.insert(0, str(REPO_ROOT / "tools"))
    try:
        from record_cast import FRAME
    finally:
        sys.path.pop(0)
    for name in ("demo.svg", "chat.svg"):
        frames = FRAME.findall((REPO_ROOT / "docs" / name).read_text())
        assert frames[0][0] == "" and frames[0][1] == frames[-1][1], name
        assert frames[0][1].count("<use ") > 5, name  # lines of text, not only the background


def test_the_readme_installs_this_checkout_and_names_one_repository():
    root = REPO_ROOT
    readme, project = (root / "README.md").read_text(), (root / "pyproject.toml").read_text()
    blocks = {}
    for name in ("demo-command", "test-command"):  # as .ci/run takes them
        run = subprocess.run(["bash", "-c", 'source <(sed -n "/^readme_block()/,/^}/p" .ci/run); readme_block "$1"',
                              "-", name], cwd=root, capture_output=True, text=True, timeout=30)
        assert run.returncode == 0 and run.stdout.strip(), run.stderr
        blocks[name] = run.stdout
    assert '-e ".[server]"' in blocks["demo-command"] and '-e ".[test]"' in blocks["test-command"]
    # pre-releases only where the requirements name them: --pre would take release candidates of everything
    assert "--pre" not in blocks["demo-command"] + blocks["test-command"]
    homepage = re.search(r'^Homepage = "(\S+)"', project, re.M)[1]
    assert homepage == "https://github.com/OpenVoiceOS/ovos-a2a-agent-plugin"  # the repository, as the seed names it
    assert f"git clone {homepage} && cd {homepage.rsplit('/', 1)[1]}" in readme
    assert "github.com/OpenVoiceOS/ovos-a2a-solver-plugin" not in readme + project  # the package's name, not the repo's
    for paragraph in readme.split("\n\n"):  # the package index only after the release, marked so
        if re.search(r'pip install "?ovos-a2a-solver-plugin', paragraph):
            assert "0.0.4a1" in paragraph and "release" in paragraph, paragraph
    assert "/_admin/finish" in readme


# ---- shell completion ----------------------------------------------------------------------

def complete(script: str, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (the command line so far), with ``script`` loaded."""
    line = " ".join(f"'{w}'" for w in ("ovos-a2a", *words))
    probe = f'{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _ovos_a2a; printf "%s\\n" "${{COMPREPLY[@]}}"'
    result = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return [w for w in result.stdout.splitlines() if w]


def test_bash_completion_offers_commands_flags_and_choices(cli):
    result = cli.run("completion", "bash")
    assert result.returncode == 0, result.report
    script = result.stdout
    assert complete(script, "se") == ["send", "serve"]
    assert complete(script, "send", "--st") == ["--stream"]
    assert "--personas-dir" in complete(script, "serve", "--pe")
    assert complete(script, "serve", "--backend", "") == ["persona", "echo", "scenarios"]
    assert complete(script, "completion", "") == ["bash", "zsh"]
    assert complete(script, "store", "") == ["check"]
    assert complete(script, "send", "http://localhost:8337/a2a", "") == []  # words: the shell's own completion
    zsh = cli.run("completion", "zsh").stdout
    assert zsh.startswith("#compdef ovos-a2a") and script in zsh


def test_verbose_shows_the_raw_exchange_without_credentials(cli, agent):
    result = cli.run("send", agent.agent("echo"), "hello wire", "-v", "--auth", "Bearer not-to-be-shown-7Qk")
    assert result.returncode == 0, result.report
    assert echo_answer(result)["text"] == "hello wire"  # stdout: the answer alone
    wire = result.stderr
    assert "> GET " in wire and "/.well-known/agent-card.json" in wire, wire  # the card
    assert re.search(r'^> POST \S+\n(?:.+\n)*\n\{.*"hello wire"', wire, re.M), wire  # the request, its body
    assert "\n< 200 OK\n" in wire and '"artifactUpdate"' in wire, wire  # the response, event by event
    assert "not-to-be-shown-7Qk" not in wire and "authorization: <hidden>" in wire, wire
