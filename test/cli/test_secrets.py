# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Secrets never on a command line: the bridge's password, tokens and a database URL with a
password come from the environment or from files only their owner may read, and the client
commands take ``--auth`` from the environment too.

Every check runs the real command (test/support/bridge_process.py, test/support/cli_run.py;
the client's asks a bridge served in process) and looks where another user of the machine
would: ``/proc/PID/cmdline`` of the bridge and of each of its workers.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess
from support.bridge_rpc import HEADERS, OwnerCalls, answer, message, rpc, state, task_of
from support.cli_run import Cli

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")
PASSWORD = "pw-Vq7-never-shown"
TOKEN = "tok-Jx3-never-shown"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and file modes")


def private_file(path: Path, text: str, mode: int = 0o600) -> Path:
    """``path`` holding ``text``, with the permission bits ``mode``."""
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def command_line(pid: int) -> str:
    """What every user of the machine reads of process ``pid``: its arguments."""
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def refused(result) -> str:
    """The one stderr line of a ``serve`` that must not start (checked: status 2, no traceback)."""
    assert result.returncode == 2, result.report
    assert "Traceback" not in result.stderr and "serving" not in result.stdout, result.report
    lines = result.stderr_lines
    assert len(lines) == 1 and lines[0].startswith("ovos-a2a: "), result.report
    return lines[0]


def unauthorized_without_credentials(bridge: BridgeProcess) -> None:
    body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": {"message": message("hi")}}
    assert httpx.post(bridge.url + "/", json=body, headers=HEADERS, timeout=30).status_code == 401


def answers_with_the_password(bridge: BridgeProcess) -> None:
    response = rpc(bridge.url, "SendMessage", {"message": message("hi")}, auth=("a2a", PASSWORD))
    assert state(task_of(response)) == "TASK_STATE_COMPLETED", response


def answers_with_the_token(bridge: BridgeProcess) -> None:
    task = OwnerCalls(bridge, TOKEN).send(message("hi"))
    assert state(task) == "TASK_STATE_COMPLETED" and answer(task) == "echo: hi", task


# ---- the safe ways -----------------------------------------------------------------------------

@pytest.mark.parametrize("store", ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
    not POSTGRES, reason="set OVOS_A2A_TEST_POSTGRES to a database URL"))])
def test_secrets_from_private_files_are_on_no_command_line_of_the_bridge_or_its_workers(tmp_path, store):
    args = ["--workers", "2",
            "--password-file", str(private_file(tmp_path / "password", PASSWORD + "\n")),
            "--tokens-file", str(private_file(tmp_path / "tokens", f"other-token\n{TOKEN}\n"))]
    db_password = None
    if store == "postgresql":
        from sqlalchemy.engine import make_url

        password = make_url(POSTGRES).password
        assert password, "the test database's URL has no password to hide"
        db_password = f":{password}@"  # as a URL holds it (the password alone may be a common word)
        args += ["--db-file", str(private_file(tmp_path / "db", POSTGRES))]
    # fresh: its own command line is what is read (a forked one shows its fork server's)
    with BridgeProcess(*args, env={"OVOS_A2A_REPLICA": f"secrets-{os.getpid()}"}, fresh=True) as bridge:
        unauthorized_without_credentials(bridge)
        answers_with_the_password(bridge)
        answers_with_the_token(bridge)
        processes = [bridge.proc.pid, *bridge.worker_ids()]
        assert len(processes) == 3
        for pid in processes:
            seen = command_line(pid)
            for secret in filter(None, (PASSWORD, TOKEN, db_password)):
                assert secret not in seen, f"process {pid} shows a secret: {seen}"
    assert "WARNING" not in bridge.stderr_text(), bridge.stderr_text()


# ---- the flag still works, with a warning -----------------------------------------------------

def test_a_password_flag_still_works_and_says_where_to_put_it_instead():
    with BridgeProcess("--password", PASSWORD) as bridge:
        unauthorized_without_credentials(bridge)
        answers_with_the_password(bridge)
    warnings = [line for line in bridge.stderr_text().splitlines() if "WARNING" in line]
    assert len(warnings) == 1, bridge.stderr_text()
    assert "--password" in warnings[0] and "ps" in warnings[0], warnings
    assert "OVOS_A2A_PASSWORD" in warnings[0] and "--password-file" in warnings[0], warnings
    assert PASSWORD not in bridge.stderr_text()


def test_a_database_flag_with_a_password_warns_and_one_without_does_not(tmp_path):
    cli = Cli(tmp_path / "state")
    closed = "127.0.0.1:9"  # the discard port: nothing listens, the start fails in one line
    with_password, without = cli.run_all(
        ["serve", "--backend", "echo", "--port", "0", "--db", f"postgresql+asyncpg://a2a:s3cret@{closed}/a2a"],
        ["serve", "--backend", "echo", "--port", "0", "--db", f"postgresql+asyncpg://a2a@{closed}/a2a"])
    warning, failure = with_password.stderr_lines
    assert "--db" in warning and "OVOS_A2A_DB" in warning and "--db-file" in warning, with_password.report
    assert "s3cret" not in with_password.stderr and failure.startswith("ovos-a2a: "), with_password.report
    assert not any("WARNING" in line for line in without.stderr_lines), without.report


# ---- files others may read are refused ---------------------------------------------------------

@pytest.mark.parametrize("flag, content, mode", [
    ("--config", json.dumps({"password": PASSWORD, "tokens": [TOKEN]}), 0o644),
    ("--config", json.dumps({"tokens": [TOKEN]}), 0o640),
    ("--password-file", PASSWORD, 0o644),
    ("--tokens-file", TOKEN, 0o604),
])
def test_a_file_with_a_secret_is_refused_while_others_may_read_it_and_used_once_it_is_private(tmp_path, flag,
                                                                                              content, mode):
    path = private_file(tmp_path / "secret-file", content, mode)
    line = refused(Cli(tmp_path / "state").run("serve", "--backend", "echo", "--port", "0", flag, str(path)))
    assert flag in line and str(path) in line and f"mode {mode:04o}" in line and "chmod 600" in line, line
    assert PASSWORD not in line and TOKEN not in line, line
    path.chmod(0o600)
    with BridgeProcess(flag, str(path)) as bridge:
        unauthorized_without_credentials(bridge)
        if PASSWORD in content:
            answers_with_the_password(bridge)
        if TOKEN in content:
            answers_with_the_token(bridge)
    assert "WARNING" not in bridge.stderr_text(), bridge.stderr_text()


def test_a_secret_and_its_file_at_once_are_refused(tmp_path):
    path = private_file(tmp_path / "password", PASSWORD)
    line = refused(Cli(tmp_path / "state").run("serve", "--backend", "echo", "--port", "0",
                                               "--password", "other", "--password-file", str(path)))
    assert "--password" in line and "--password-file" in line and "not both" in line, line


# ---- the client commands ---------------------------------------------------------------------

def test_the_client_takes_its_auth_header_from_the_environment(tmp_path):
    cli = Cli(tmp_path / "state")
    with InProcessBridge(env={"OVOS_A2A_TOKENS": TOKEN}) as bridge:
        env = {"A2A_CLIENT_AUTH": f"Bearer {TOKEN}", "A2A_CLIENT_PEER_URL": bridge.root}
        allowed = cli.run("send", bridge.url, "hi", env=env)
        elsewhere = cli.run("send", bridge.url, "hi", env={**env, "A2A_CLIENT_PEER_URL": "http://127.0.0.1:9"})
        assert allowed.returncode == 0 and allowed.stdout.strip() == "echo: hi", allowed.report
        # the header goes only to the peer it is for: any other agent is asked without it, and told so
        assert elsewhere.returncode != 0 and "A2A_CLIENT_AUTH is only for http://127.0.0.1:9" in elsewhere.stderr, \
            elsewhere.report
