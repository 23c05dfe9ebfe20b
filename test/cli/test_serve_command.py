# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a serve`` / ``python -m ovos_a2a_solver.bridge``: settings, start-up errors, what
it prints, what it logs, and defaults written once.

Every check runs the real command in a subprocess (test/support/cli_run.py, test/support/bridge_process.py)
on loopback with its own ``XDG_STATE_HOME``, and asserts on what a person sees: the exit
status and the one line on stderr, or the lines printed once it serves. Commands that must
fail are independent: they run side by side, once per module.
"""
from __future__ import annotations

import dataclasses
import inspect
import os
import re
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack

import pytest

from ovos_a2a_solver.bridge.config import (BridgeSettings, bounds_text, default_text, env_name, flag_name,
                                           settings_table, spec_of)

from support import REPO_ROOT, load_tool, preloaded
from support.network import free_port
from support.bridge_process import READY_LINE, BridgeProcess
from support.bridge_rpc import answer, message, send, state, task_of
from support.cli_run import MODULE, Cli, Result

BRIDGE_DOC = REPO_ROOT / "docs" / "bridge.md"
PLUGIN_DOC = REPO_ROOT / "docs" / "plugin.md"
POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
STOP_TIMEOUT = 15.0

#: runs the command line with ``grpc`` impossible to import, as on a machine without the grpc extra
WITHOUT_GRPC = """
import importlib.abc, sys

class NoGrpc(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "grpc" or name.startswith("grpc."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoGrpc())
from ovos_a2a_solver.cli import main
sys.exit(main(sys.argv[1:]))
"""


# ---- helpers -------------------------------------------------------------------------------

def listening_socket() -> socket.socket:
    """A socket that holds a loopback port (so that it is in use)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


def run_side_by_side(cli: Cli, commands: dict[str, tuple[list[str], dict[str, str], str | list[str]]],
                     timeout: float = 90) -> dict[str, Result]:
    """``{name: Result}`` of ``(argv, env, module or interpreter command)`` run at the same time: a
    module (``ovos_a2a_solver.cli``, or one of support/ that runs it) as ``python -m MODULE ARGV``
    forked from the fork server, as the command line tests run every command (support/preloaded.py);
    an interpreter command started plain with ARGV (a script that must import what the fork server
    has imported already). A command still running after ``timeout`` seconds fails the test."""
    procs = {}
    try:
        for name, (argv, env, command) in commands.items():
            streams = dict(env=cli.with_env(**env), text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
            procs[name] = (preloaded.start(command, argv, **streams) if isinstance(command, str)
                           else subprocess.Popen([*command, *argv], **streams))
        results = {}
        for name, proc in procs.items():
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"{name}: {commands[name][0]} did not end within {timeout:g} s") from None
            results[name] = Result(tuple(commands[name][0]), proc.returncode, out, err)
        return results
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def one_line_error(result: Result, status: int) -> str:
    """The failed command's only stderr line (checked: the exit status, no traceback, nothing served)."""
    assert result.returncode == status, result.report
    assert "Traceback" not in result.stderr, result.report
    assert "serving" not in result.stdout, result.report
    lines = result.stderr_lines
    assert len(lines) == 1 and lines[0].startswith("ovos-a2a: "), result.report
    return lines[0]


def usage_error(result: Result) -> str:
    """argparse's last line for a refused flag (checked: exit status 2, a usage line, no traceback)."""
    assert result.returncode == 2, result.report
    assert "Traceback" not in result.stderr and result.stderr.startswith("usage: "), result.report
    return result.stderr_lines[-1]


def stop_with(bridge: BridgeProcess, sig: int, times: int = 1) -> int:
    """Send ``sig`` (``times`` times, 50 ms apart: an impatient Ctrl-C while it stops) and
    wait for the bridge to end, failing after STOP_TIMEOUT; its exit status."""
    for n in range(times):
        time.sleep(0.05 if n else 0)
        bridge.proc.send_signal(sig)
    try:
        return bridge.proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        bridge.kill9()
        raise AssertionError(f"the bridge did not stop within {STOP_TIMEOUT:g} s of signal {sig}") from None


# ---- A. refusals: each a line and an exit status -------------------------------------------

@pytest.fixture(scope="module")
def refusals(tmp_path_factory):
    """``{name: Result}`` of ``serve`` commands that must not start, run side by side once."""
    state = tmp_path_factory.mktemp("state")
    cli = Cli(state)
    base = ["serve", "--backend", "echo", "--port", "0", "--state-dir", str(tmp_path_factory.mktemp("bridge"))]
    cli_command, no_grpc = MODULE, [sys.executable, "-c", WITHOUT_GRPC]  # plain: the fork server imported grpc
    with ExitStack() as held:
        http_busy = held.enter_context(listening_socket()).getsockname()[1]
        grpc_busy = held.enter_context(listening_socket()).getsockname()[1]
        closed = free_port()
        commands = {
            "base-url-words": ([*base, "--base-url", "not a url"], {}, cli_command),
            "base-url-ftp": ([*base, "--base-url", "ftp://ovos.example.com/a2a"], {}, cli_command),
            "base-url-env": (base, {"OVOS_A2A_BASE_URL": "http://"}, cli_command),
            "db-unreachable": (base, {"OVOS_A2A_DB": f"postgresql+asyncpg://a2a:s3cret@127.0.0.1:{closed}/a2a"},
                               cli_command),
            "db-memory": ([*base, "--db", "sqlite://"], {}, cli_command),
            "db-memory-aiosqlite": ([*base, "--db", "sqlite+aiosqlite:///:memory:"], {}, cli_command),
            "db-memory-env": (base, {"OVOS_A2A_DB": "sqlite:///:memory:"}, cli_command),
            "db-unknown": ([*base, "--db", "nosuchdb://host/db"], {}, cli_command),
            "db-not-async": ([*base, "--db", "postgresql://a2a@127.0.0.1/a2a"], {}, cli_command),
            "db-not-postgres": ([*base, "--db", "mysql+aiomysql://a2a@127.0.0.1/a2a"], {}, cli_command),
            "port-in-use": ([*base, "--port", str(http_busy)], {}, cli_command),
            "port-too-big": ([*base, "--port", "99999"], {}, cli_command),
            "port-negative": ([*base, "--port", "-1"], {}, cli_command),
            "heartbeat-zero": ([*base, "--heartbeat", "0"], {}, cli_command),
            "grpc-missing": ([*base, "--grpc-port", "0"], {}, no_grpc),
            "grpc-in-use": ([*base, "--grpc-port", str(grpc_busy)], {}, cli_command),
        }
        results = run_side_by_side(cli, commands)
    results["ports"] = (http_busy, grpc_busy, closed)
    return results


@pytest.mark.parametrize("case, shown", [("base-url-words", "'not a url'"),
                                         ("base-url-ftp", "'ftp://ovos.example.com/a2a'"),
                                         ("base-url-env", "'http://'")])
def test_a_base_url_that_is_not_http_with_a_host_is_refused_in_one_line(refusals, case, shown):
    line = one_line_error(refusals[case], 2)
    assert "--base-url" in line and "OVOS_A2A_BASE_URL" in line and "http(s) URL with a host" in line, line
    assert shown in line, line


def test_an_unreachable_database_is_one_line_naming_its_host_and_the_cause(refusals):
    closed = refusals["ports"][2]
    line = one_line_error(refusals["db-unreachable"], 1)
    assert f"127.0.0.1:{closed}" in line and "connection refused" in line, line
    assert "s3cret" not in line, line  # the password is not shown


@pytest.mark.parametrize("case", ["db-memory", "db-memory-aiosqlite", "db-memory-env"])
def test_an_in_memory_sqlite_database_is_refused_in_one_line(refusals, case):
    line = one_line_error(refusals[case], 2)
    assert "in-memory SQLite" in line and "--db" in line and "OVOS_A2A_DB" in line, line


def test_a_database_url_of_an_unknown_kind_or_driver_is_refused_in_one_line(refusals):
    unknown = one_line_error(refusals["db-unknown"], 2)
    assert "unknown database 'nosuchdb'" in unknown and "postgresql+asyncpg://" in unknown, unknown
    not_async = one_line_error(refusals["db-not-async"], 2)
    assert "'postgresql' is not an asyncio driver" in not_async and "postgresql+asyncpg://" in not_async, not_async
    other = one_line_error(refusals["db-not-postgres"], 2)  # replicas need PostgreSQL's LISTEN/NOTIFY
    assert "'mysql+aiomysql' is not supported" in other and "postgresql+asyncpg://" in other, other


def test_a_port_in_use_is_one_line_naming_host_and_port(refusals):
    busy = refusals["ports"][0]
    line = one_line_error(refusals["port-in-use"], 1)
    assert f"port {busy} on 127.0.0.1 is already in use" in line and "--port" in line, line


@pytest.mark.parametrize("case, flag, value", [("port-too-big", "--port", "99999"), ("port-negative", "--port", "-1"),
                                               ("heartbeat-zero", "--heartbeat", "0")])
def test_a_flag_out_of_range_is_a_usage_error(refusals, case, flag, value):
    line = usage_error(refusals[case])
    f = next(f for f in dataclasses.fields(BridgeSettings) if flag_name(f) == flag)
    assert f"argument {flag}: must be {bounds_text(f).replace('–', ' to ')}, got {value}" in line, line


def test_grpc_without_the_grpc_extra_names_the_fix_in_one_line(refusals):
    line = one_line_error(refusals["grpc-missing"], 2)
    assert "--grpc-port needs gRPC" in line and "pip install" in line and "[grpc]" in line, line


def test_a_grpc_port_in_use_is_one_line_naming_the_port(refusals):
    busy = refusals["ports"][1]
    line = one_line_error(refusals["grpc-in-use"], 2)
    assert f"gRPC port {busy} on 127.0.0.1 is already in use" in line and "--grpc-port" in line, line


#: runs the command line with the task store failing to initialize (inside the server's start-up)
FAILING_STORE = "support.failing_store"


def test_a_failure_inside_the_server_start_is_one_line(tmp_path):
    cli = Cli(tmp_path / "state")
    argv = ["serve", "--backend", "echo", "--port", "0", "--state-dir"]
    result = run_side_by_side(cli, {"plain": ([*argv, str(tmp_path / "plain")], {}, FAILING_STORE),
                                    "debug": ([*argv, str(tmp_path / "debug"), "--debug"], {}, FAILING_STORE)})
    line = one_line_error(result["plain"], 1)
    store = tmp_path / "plain" / "bridge.sqlite3"
    assert line == f"ovos-a2a: cannot prepare the task store ({store}): the task store cannot start (test)", line
    assert "Traceback" in result["debug"].stderr, result["debug"].report  # --debug shows where


@pytest.mark.skipif(not POSTGRES, reason="set OVOS_A2A_TEST_POSTGRES to a database URL")
def test_a_database_that_refuses_the_password_is_one_line(tmp_path):
    from sqlalchemy.engine import make_url

    wrong = make_url(POSTGRES).set(password="not-the-password").render_as_string(hide_password=False)
    result = Cli(tmp_path / "state").run("serve", "--backend", "echo", "--port", "0", env={"OVOS_A2A_DB": wrong})
    line = one_line_error(result, 1)
    assert "password authentication failed" in line and "not-the-password" not in line, line


def test_an_environment_port_out_of_range_is_clamped_with_a_warning(tmp_path):
    with BridgeProcess(port=None, env={"OVOS_A2A_PORT": "-1", "XDG_STATE_HOME": str(tmp_path)}) as bridge:
        assert bridge.port > 0  # clamped to 0: any free port
        assert state(task_of(send(bridge.url, message("hi")))) == "TASK_STATE_COMPLETED"
    assert "OVOS_A2A_PORT='-1' is out of range [0, 65535]; using 0" in bridge.stderr_text()


# ---- A5, A6. what it prints and what it logs ----------------------------------------------

OVOS_LOG_LINE = re.compile(r" - (DEBUG|INFO|WARNING|ERROR) - ")
PERSONA_WARNINGS = ("padatious", "old style entrypoint")


def test_start_is_quiet_says_where_it_serves_and_ctrl_c_twice_stops_it(tmp_path):
    bridge = BridgeProcess(backend="persona", env={"XDG_STATE_HOME": str(tmp_path)})
    try:
        lines = bridge.stdout_text().splitlines()
        assert READY_LINE.fullmatch(lines[0]), lines  # the machine-readable line stays first
        assert f"  listening on 127.0.0.1 port {bridge.port}" in lines, lines  # the real port of --port 0
        assert bridge.card_url == f"{bridge.url}/.well-known/agent-card.json"
        assert "  Ctrl-C to stop" in lines, lines
        status = stop_with(bridge, signal.SIGINT, times=2)
        stdout = bridge.stdout_text()
        printed = stdout + bridge.stderr_text()
    finally:
        bridge.stop()
    assert status == 0 and "Traceback" not in printed, printed
    assert stdout.splitlines()[-1] == "ovos-a2a: stopped", printed  # it says so
    assert not OVOS_LOG_LINE.search(printed) and not any(w in printed for w in PERSONA_WARNINGS), printed


def test_debug_shows_the_persona_logs(tmp_path):
    with BridgeProcess("--debug", backend="persona", env={"XDG_STATE_HOME": str(tmp_path)}) as bridge:
        printed = bridge.stdout_text()
    assert OVOS_LOG_LINE.search(printed), printed  # what the default start keeps quiet is there
    assert READY_LINE.search(printed), printed


def test_sigterm_stops_gracefully_with_status_0(tmp_path):
    bridge = BridgeProcess(env={"XDG_STATE_HOME": str(tmp_path)})
    try:
        assert stop_with(bridge, signal.SIGTERM) == 0
    finally:
        bridge.stop()
    assert "Traceback" not in bridge.stderr_text(), bridge.stderr_text()


SECRET_TEXT = "quokka-7193-zebra"


def _log_after_one_message(*args: str, env: dict[str, str]) -> str:
    """Everything a bridge started with ``args`` logged while it answered SECRET_TEXT once."""
    with BridgeProcess(*args, env=env) as bridge:
        assert answer(task_of(send(bridge.url, message(SECRET_TEXT)))) == f"echo: {SECRET_TEXT}"
    return bridge.stderr_text()


def test_debug_logs_the_bridge_but_never_message_text(tmp_path):
    log = _log_after_one_message("--debug", env={"XDG_STATE_HOME": str(tmp_path)})
    assert "DEBUG ovos_a2a_solver.bridge" in log, log
    assert SECRET_TEXT not in log, log


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_message_text_is_logged_only_when_asked(tmp_path, how):
    args, env = (("--log-messages",), {}) if how == "flag" else ((), {"OVOS_A2A_LOG_MESSAGES": "1"})
    log = _log_after_one_message(*args, env={**env, "XDG_STATE_HOME": str(tmp_path)})
    assert SECRET_TEXT in log and "Request body" in log, log


# ---- B. defaults written once ---------------------------------------------------------------

def test_serve_help_states_every_setting_default_and_bound_from_the_settings(tmp_path):
    result = Cli(tmp_path).run("serve", "--help")
    assert result.returncode == 0, result.report
    text = "".join(result.stdout.split())  # argparse wraps lines anywhere

    for f in dataclasses.fields(BridgeSettings):
        spec = spec_of(f)
        name = flag_name(f) if spec.flag else env_name(f)
        assert "".join(f"{name}".split()) in text, name
        assert "".join(spec.help.split()) in text, spec.help
        if default_text(f) != "—":
            assert "".join(f"default {default_text(f)}".split()) in text, (name, default_text(f))
        assert bounds_text(f) in text, (name, bounds_text(f))


def test_the_bridge_settings_table_is_the_settings():
    tables = load_tool("settings_tables")
    written = tables.written_table(BRIDGE_DOC, tables.BRIDGE)
    assert written == settings_table(), settings_table()


def test_one_timeout_default_for_plugin_client_and_command_line(tmp_path):
    from ovos_a2a_solver.client import A2AClient
    from ovos_a2a_solver._defaults import DEFAULT_TIMEOUT
    from ovos_a2a_solver._settings import EngineSettings

    assert inspect.signature(A2AClient).parameters["timeout"].default == DEFAULT_TIMEOUT
    assert EngineSettings(agent_url="http://127.0.0.1:1/a2a").timeout == DEFAULT_TIMEOUT
    for command in ("send", "demo"):
        result = Cli(tmp_path).run(command, "--help")
        assert f"(default {DEFAULT_TIMEOUT:g})" in result.stdout, result.report
    assert f"`timeout` | `{DEFAULT_TIMEOUT:g}`" in PLUGIN_DOC.read_text(encoding="utf-8")


def test_the_conversation_store_defaults_are_the_plugin_defaults():
    from ovos_a2a_solver.conversations.conversation_store import ConversationStore
    from ovos_a2a_solver._settings import EngineSettings

    store, settings = ConversationStore(), EngineSettings(agent_url="http://127.0.0.1:1/a2a")
    assert (store.max_conversations, store.idle_ttl) == (settings.max_conversations, settings.conversation_ttl)


def test_the_default_store_names_the_driver_it_runs_on(tmp_path):
    url = BridgeSettings(state_dir=str(tmp_path)).database_url
    assert url == f"sqlite+pysqlite:///{tmp_path / 'bridge.sqlite3'}"


@pytest.mark.parametrize("operator_says, traced", [(None, False), ("true", True), ("false", False)])
def test_the_sdks_tracing_is_off_unless_the_operator_turns_it_on(operator_says, traced):
    """The a2a-sdk's spans cost about a fifth of the throughput with no tracer configured."""
    env = {k: v for k, v in os.environ.items() if k != "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"}
    if operator_says is not None:
        env["OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"] = operator_says
    probe = ("from ovos_a2a_solver.bridge.process.startup import sdk_tracing_off_by_default\n"
             "sdk_tracing_off_by_default()\n"
             "import a2a.utils.telemetry as telemetry\n"
             "print(telemetry.otel_installed, telemetry.otel_enabled)")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    installed, enabled = out.split()
    assert installed == "True", "opentelemetry-api is not installed: this test proves nothing"
    assert enabled == str(traced)


# ---- a settings file ------------------------------------------------------------------------

def test_a_settings_file_is_read_and_flags_and_the_environment_win_over_it(tmp_path):
    import json

    config = tmp_path / "bridge.json"
    ports = [free_port() for _ in range(3)]
    config.write_text(json.dumps({"port": ports[0], "max-concurrent": 3, "heartbeat": 0, "name": "from the file"}))
    with BridgeProcess("--config", str(config), port=None) as bridge:
        assert bridge.port == ports[0] and bridge.name == "from the file"
        assert "heartbeat=0 is out of range [1, 300]; using 1" in bridge.stderr_text()  # checked as the environment is
    with BridgeProcess("--config", str(config), port=ports[1], env={"OVOS_A2A_NAME": "from the environment"}) as bridge:
        assert bridge.port == ports[1] and bridge.name == "from the environment"
    with BridgeProcess(port=None, env={"OVOS_A2A_CONFIG": str(config), "OVOS_A2A_PORT": str(ports[2])}) as bridge:
        assert bridge.port == ports[2] and bridge.name == "from the file"


@pytest.mark.parametrize("content, said", [
    ('{"prot": 8337}', "names no setting 'prot'; did you mean 'port'?"),
    ("[1, 2]", "must hold a JSON object of settings"),
    ("{port: 1}", "is not JSON"),
    ('{"host": "0.0.0.0", "password": false}', ": password must be a string, not a boolean"),
    ('{"tokens": true}', ": tokens must be a list of strings"),
    ('{"tokens": "a-token"}', ": tokens must be a list of strings"),
    ('{"port": "8338"}', ": port must be an integer, not a string"),
    ('{"heartbeat": [1]}', ": heartbeat must be a number, not a list"),
    ('{"access_log": "yes"}', ": access_log must be true or false, not a string"),
    ('{"db": 5432}', ": db must be a string, not a number"),
    ('{"backend": "nothing"}', ": backend must be one of persona, echo, scenarios"),
    ('{"password_file": true}', ": password_file must be a file name (a string), not a boolean"),
])
def test_a_settings_file_that_cannot_be_used_is_one_line(tmp_path, content, said):
    config = tmp_path / "bridge.json"
    config.write_text(content)
    result = Cli(tmp_path / "state").run("serve", "--config", str(config), "--backend", "echo")
    line = one_line_error(result, 2)
    assert line.startswith(f"ovos-a2a: --config (OVOS_A2A_CONFIG): {config}") and said in line, line
