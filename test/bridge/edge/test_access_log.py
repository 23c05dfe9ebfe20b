"""The access log: off by default; on, one line per request on every binding, with the method,
binding, status, duration and owner, and never a message's text."""
import asyncio
import re

import httpx
from a2a.types import Message, Part, Role, SendMessageRequest

from support.bridge_process import BridgeProcess
from support.bridge_rpc import HEADERS, OwnerCalls, grpc_client, message, send, task_of
from support.waiting import wait_until

SECRET = "marmalade-4471-otter"
TOKEN = "access-log-owner-token-9Qx"
LINE = re.compile(r"INFO ovos_a2a_solver\.bridge\.access: (?P<what>\S+ \S+ \S+ \S+) (?P<status>\S+) "
                  r"(?P<ms>\d+\.\d)ms owner=(?P<owner>\S+)$", re.M)


def access_lines(bridge: BridgeProcess, count: int) -> list[dict]:
    """The first ``count`` access lines the bridge wrote (waiting for them: a streamed answer
    is logged when it ends)."""
    found = wait_until(lambda: [m.groupdict() for m in LINE.finditer(bridge.stderr_text())],
                       f"{count} access log lines", until=lambda lines: len(lines) >= count)
    return found[:count]


def test_the_access_log_is_off_by_default():
    with BridgeProcess() as bridge:
        assert task_of(send(bridge.url, message(SECRET)))
        assert "ovos_a2a_solver.bridge.access" not in bridge.stderr_text()


def test_each_http_request_is_one_line_without_message_text():
    with BridgeProcess("--access-log", env={"OVOS_A2A_TOKENS": TOKEN}) as bridge:
        owner = OwnerCalls(bridge, TOKEN)
        task = owner.send(message(SECRET))
        response = httpx.get(f"{bridge.url}/rest/tasks/{task['id']}",
                             headers={**HEADERS, "Authorization": f"Bearer {TOKEN}"}, timeout=30)
        assert response.status_code == 200, response.text
        refused = httpx.post(bridge.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                                     "params": {"id": task["id"]}}, headers=HEADERS, timeout=30)
        assert refused.status_code == 401
        lines = access_lines(bridge, 3)
        log = bridge.stderr_text()
    assert SECRET not in log, log
    assert [(line["what"], line["status"]) for line in lines] == [
        ("POST /a2a/ JSON-RPC SendMessage", "200"),
        (f"GET /a2a/rest/tasks/{task['id']} HTTP+JSON GetTask", "200"),
        ("POST /a2a/ JSON-RPC -", "401"),  # refused before its body was read: no method known
    ], lines
    assert lines[0]["owner"] == lines[1]["owner"] and lines[0]["owner"].startswith("token-"), lines
    assert lines[2]["owner"] == "anonymous", lines


def test_a_grpc_call_is_one_line():
    with BridgeProcess("--access-log", "--grpc-port", "0") as bridge:
        async def call() -> None:
            async with grpc_client(bridge.url) as client:
                request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id="m-grpc",
                                                             parts=[Part(text=SECRET)]))
                async for _ in client.send_message(request):
                    pass

        asyncio.run(call())
        lines = access_lines(bridge, 2)  # the card, then the call
        log = bridge.stderr_text()
    assert SECRET not in log, log
    assert lines[-1]["what"] == "gRPC SendMessage gRPC SendMessage" and lines[-1]["status"] == "OK", lines
    assert lines[-1]["owner"] == "anonymous"
