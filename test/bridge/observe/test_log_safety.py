"""The bridge's log cannot be written into by a caller: a path, a JSON-RPC id or a webhook URL
with a line break or a terminal escape is logged on one line, escaped; the access log shows
the path as it was sent; refusals a local user can set off in a loop are a few lines, not one
each."""
from __future__ import annotations

import re
import socket
import sys

import httpx
import pytest

from support.bridge_process import BridgeProcess, worker_sockets
from support.bridge_rpc import HEADERS, message, rpc
from support.waiting import wait_until

TOKEN = "log-safety-owner-token-7Rw"
FORGED = "FORGED INFO ovos_a2a_solver.bridge.access: GET /a2a/ HTTP 200 1.0ms owner=admin"


def forged_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith("FORGED")]


def test_a_path_cannot_forge_an_access_log_line_nor_reach_the_terminal():
    with BridgeProcess("--access-log", env={"OVOS_A2A_TOKENS": TOKEN}) as bridge:
        paths = ["/a2a/rest/tasks/x%0A" + FORGED.replace(" ", "%20"), "/a2a/rest/tasks/%1B[2J",
                 "/a2a/rest/tasks/%E2%80%A8FORGED", "/a2a/rest/tasks/%00%0D"]
        with httpx.Client(timeout=30) as client:
            for path in paths:
                answer = client.get(bridge.root + path, headers=HEADERS)  # no credentials
                assert answer.status_code == 401, answer.text
        log = wait_until(bridge.stderr_text, "the access lines",  # (a forged one names the access log too)
                         until=lambda log: log.count(" owner=anonymous") >= len(paths))
    assert not forged_lines(log), log
    assert "\x1b" not in log and "\u2028" not in log and "\x00" not in log and "\r" not in log, repr(log)
    for path in paths:  # the path as it was sent, percent-encoded
        assert f"GET {path} HTTP+JSON" in log, (path, log)


def test_a_json_rpc_id_cannot_forge_a_line_of_the_sdks_warning():
    with BridgeProcess() as bridge:  # default flags: the a2a-sdk's warning about a request's error is on
        answer = httpx.post(bridge.url + "/", headers=HEADERS, timeout=30,
                            json={"jsonrpc": "2.0", "id": "a\n" + FORGED + "\x1b[2J", "method": "NoSuchMethod",
                                  "params": {}})
        assert answer.status_code == 200 and "error" in answer.json(), answer.text
        log = wait_until(bridge.stderr_text, "the SDK's warning", until=lambda log: "Request Error" in log)
    assert not forged_lines(log), log
    assert "\x1b" not in log, repr(log)
    assert "a\\nFORGED" in log, log


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SQLite workers need Linux")
def test_a_loop_of_connections_to_a_workers_socket_writes_a_few_lines():
    """Any local user may connect to a worker's socket (abstract namespace) and is hung up on:
    each refusal is not a line of its own."""
    with BridgeProcess("--workers", "2") as bridge:
        names = worker_sockets(bridge)
        assert names, "no worker socket found"
        for _ in range(200):
            asking = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            asking.settimeout(10)
            try:
                asking.connect("\0" + names[0])
                asking.recv(16)  # hung up on
            except OSError:
                pass
            finally:
                asking.close()
        wait_until(bridge.stderr_text, "the refusal's warning",
                   until=lambda log: "hung up on a request on this worker's socket" in log)
        bridge.stop()
        log = bridge.stderr_text()
    refusals = re.findall(r"^.*hung up on a request on this worker's socket.*$", log, re.M)
    assert 1 <= len(refusals) <= 3, log[-3000:]


def test_refused_webhooks_in_a_loop_are_one_line_without_their_hosts_separators():
    with BridgeProcess() as bridge:
        done = rpc(bridge.url, "SendMessage", {"message": message("hello")})["result"]["task"]
        for number in range(30):  # a host that does not resolve, a line separator and a NUL in its name
            url = f"http://host-{number}\u2028FORGED\x00.invalid/hook"
            created = rpc(bridge.url, "CreateTaskPushNotificationConfig", {"taskId": done["id"], "url": url})
            assert created.get("error", {}).get("code") == -32602, created
        log = wait_until(bridge.stderr_text, "the refusal's warning",
                         until=lambda log: "push notification config refused" in log)
    assert "\u2028" not in log and "\x00" not in log, repr(log)
    assert "\\u2028forged\\x00.invalid" in log, log
    assert len(re.findall(r"push notification config refused", log)) == 1, log
