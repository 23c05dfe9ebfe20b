"""Bridge admission: every way a message leaves the bridge frees its slot, exactly once.

The bridge admits at most ``--max-concurrent`` messages at once. A slot that a message
never gives back disables the bridge ("busy" for everyone, until a restart). These tests
run a bridge with ONE slot and push messages out of it every way there is: refused
before admission (not from the user, empty text), refused by the SDK after admission
(unknown task, finished task, mismatched context), over JSON-RPC 1.0 and 0.3, HTTP+JSON
and gRPC, blocking and streaming; a client that leaves mid-stream; a cancel; the deadline.
After each, ``/health`` must say 0 running and the next valid message must complete.
"""
from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
from a2a.types import Message, Part, Role, SendMessageRequest
from a2a.utils.errors import InvalidParamsError

from support.bridge_in_process import InProcessBridge
from support.bridge_process import echo_log
from support.bridge_rpc import answer, cancel, get_task, grpc_client, message, post_jsonrpc, send, state, task_of
from support.waiting import wait_until


V1 = {"A2A-Version": "1.0"}
REFUSALS_PER_KIND = 20
BAD_MESSAGES = {  # what is wrong -> the message (A2A 1.0 JSON)
    "agent role": lambda: {**message("hi"), "role": "ROLE_AGENT"},
    "role 99": lambda: {**message("hi"), "role": 99},
    "role -1": lambda: {**message("hi"), "role": -1},
    "empty text part": lambda: message(""),
}
BAD_V03_MESSAGES = {
    "agent role": lambda: {"kind": "message", "messageId": uuid.uuid4().hex, "role": "agent",
                           "parts": [{"kind": "text", "text": "hi"}]},
    "empty text part": lambda: {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
                                "parts": [{"kind": "text", "text": ""}]},
}


@pytest.fixture(scope="module")
def one_slot_heartbeat_bridge():
    """One slot, gRPC too, 1 s heartbeats."""
    with InProcessBridge("--max-concurrent", "1", "--grpc-port", "0", "--heartbeat", "1") as process:
        yield process


def running(bridge: InProcessBridge) -> int:
    response = httpx.get(bridge.root + "/health", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["running"]


def assert_slot_free_and_bridge_answers(bridge: InProcessBridge) -> None:
    wait_until(lambda: running(bridge) == 0, "the bridge to report 0 messages running")
    done = task_of(send(bridge.url, message("still here?")))
    assert state(done) == "TASK_STATE_COMPLETED" and answer(done) == "echo: still here?"


def first_jsonrpc_payload(response: httpx.Response) -> dict:
    """The JSON-RPC response, or the first event of a stream (A2A 0.3 streams its errors)."""
    if "text/event-stream" in response.headers.get("content-type", ""):
        line = next(line for line in response.text.splitlines() if line.startswith("data:"))
        return json.loads(line[5:])
    return response.json()


def assert_invalid_params(response: httpx.Response, what: str) -> None:
    assert response.status_code == 200, (what, response.status_code, response.text)
    assert "text/event-stream" not in response.headers.get("content-type", ""), (what, response.text)
    error = response.json().get("error")
    assert error is not None and error["code"] == -32602, (what, response.text)


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
def test_refused_messages_over_jsonrpc_free_their_slot(one_slot_heartbeat_bridge, method):
    for what, make in BAD_MESSAGES.items():
        for _ in range(REFUSALS_PER_KIND):
            assert_invalid_params(post_jsonrpc(one_slot_heartbeat_bridge.url, method, {"message": make()}), what)
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


@pytest.mark.parametrize("method", ["message/send", "message/stream"])
def test_refused_messages_over_jsonrpc_0_3_free_their_slot(one_slot_heartbeat_bridge, method):
    for what, make in BAD_V03_MESSAGES.items():
        for _ in range(REFUSALS_PER_KIND):
            response = post_jsonrpc(one_slot_heartbeat_bridge.url, method, {"message": make()}, headers={})
            assert response.status_code == 200, (what, response.text)
            error = first_jsonrpc_payload(response).get("error")
            assert error is not None and error["code"] in (-32600, -32602), (what, response.text)
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


@pytest.mark.parametrize("route", ["message:send", "message:stream"])
def test_refused_messages_over_http_json_free_their_slot(one_slot_heartbeat_bridge, route):
    for what, make in BAD_MESSAGES.items():
        for _ in range(REFUSALS_PER_KIND):
            response = httpx.post(f"{one_slot_heartbeat_bridge.url}/rest/{route}", json={"message": make()},
                                  headers=V1, timeout=30)
            assert response.status_code == 400, (what, response.status_code, response.text)
            assert response.json()["error"]["details"][0]["reason"] == "INVALID_PARAMS", (what, response.text)
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


@pytest.mark.parametrize("streaming", [False, True], ids=["SendMessage", "SendStreamingMessage"])
def test_refused_messages_over_grpc_free_their_slot(one_slot_heartbeat_bridge, streaming):
    bad = {"agent role": Role.ROLE_AGENT, "role 99": 99, "role -1": -1}

    async def go():
        async with grpc_client(one_slot_heartbeat_bridge.url, streaming=streaming) as client:
            for what, role in [*bad.items(), ("empty text part", Role.ROLE_USER)]:
                for _ in range(REFUSALS_PER_KIND):
                    msg = Message(role=role, message_id=uuid.uuid4().hex,
                                  parts=[Part(text="" if what == "empty text part" else "hi")])
                    with pytest.raises(InvalidParamsError):
                        async for _event in client.send_message(SendMessageRequest(message=msg)):
                            pass

    asyncio.run(go())
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


def test_messages_the_sdk_refuses_after_admission_free_their_slot(one_slot_heartbeat_bridge):
    done = task_of(send(one_slot_heartbeat_bridge.url, message("finished")))
    refused = {
        "unknown task": lambda: message("hi", task_id="no-such-task"),
        "finished task": lambda: message("hi", task_id=done["id"], context_id=done["contextId"]),
        "context of another task": lambda: message("hi", task_id=done["id"], context_id="another-context"),
    }
    for what, make in refused.items():
        for method in ("SendMessage", "SendStreamingMessage"):
            for _ in range(REFUSALS_PER_KIND // 2):
                response = post_jsonrpc(one_slot_heartbeat_bridge.url, method, {"message": make()})
                error = response.json().get("error")
                assert error is not None and error["code"] in (-32001, -32004, -32602), (what, response.text)
    negative_history = post_jsonrpc(one_slot_heartbeat_bridge.url, "SendMessage",
                                    {"message": message("hi"), "configuration": {"historyLength": -1}})
    assert negative_history.json()["error"]["code"] == -32602, negative_history.text
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


def test_a_client_that_leaves_mid_stream_frees_the_slot_when_the_turn_ends(one_slot_heartbeat_bridge):
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message("slow:0.3")}}
    with httpx.stream("POST", one_slot_heartbeat_bridge.url + "/", json=body,
                      headers={**V1, "Accept": "text/event-stream"}, timeout=30) as response:
        first = next(line for line in response.iter_lines() if line.startswith("data:"))
    task_id = json.loads(first[5:])["result"]["task"]["id"]
    done = wait_until(lambda: (t := task_of(get_task(one_slot_heartbeat_bridge.url, task_id)))
                      and state(t) == "TASK_STATE_COMPLETED" and t, "the abandoned turn to complete")
    assert answer(done).endswith("Sentence 5.")
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


def test_a_canceled_turn_frees_its_slot(one_slot_heartbeat_bridge):
    task = task_of(send(one_slot_heartbeat_bridge.url, message("slow:0.5"), blocking=False))
    wait_until(lambda: answer(task_of(get_task(one_slot_heartbeat_bridge.url, task["id"]))).startswith("Sentence 1."),
               "the first sentence")
    assert state(task_of(cancel(one_slot_heartbeat_bridge.url, task["id"]))) == "TASK_STATE_CANCELED"
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


def test_a_turn_past_its_deadline_keeps_its_slot_until_it_ends(tmp_path):
    """The late turn is held (``hold:``) until the test releases it: it is still running
    when the slot is looked at, however slowly this machine goes."""
    calls = echo_log(tmp_path)
    with InProcessBridge("--max-concurrent", "1", "--deadline", "1", "--heartbeat", "5", call_log=calls) as bridge:
        late = task_of(send(bridge.url, message("hold:late")))
        assert state(late) == "TASK_STATE_WORKING"  # the deadline passed, the turn goes on
        assert running(bridge) == 1
        busy = post_jsonrpc(bridge.url, "SendMessage", {"message": message("now?")})
        assert "busy" in busy.json()["error"]["message"], busy.text
        assert state(task_of(get_task(bridge.url, late["id"]))) == "TASK_STATE_WORKING"  # still held: the slot was its
        (calls.parent / "late").touch()
        done = wait_until(lambda: task_of(get_task(bridge.url, late["id"])), "the late answer to be stored",
                          until=lambda t: state(t) == "TASK_STATE_COMPLETED")
        assert answer(done) == "echo: hold:late"
        assert_slot_free_and_bridge_answers(bridge)


def test_a_message_refused_after_admission_leaves_no_claim_behind(one_slot_heartbeat_bridge):
    """Refused by the SDK (unknown task), the message is forgotten: the same delivery again
    is refused the same way, not replayed as "already accepted"."""
    unknown = message("hi", task_id="no-such-task")
    for _ in range(3):
        response = post_jsonrpc(one_slot_heartbeat_bridge.url, "SendMessage", {"message": unknown})
        assert response.json()["error"]["code"] == -32001, response.text
    assert_slot_free_and_bridge_answers(one_slot_heartbeat_bridge)


CALLERS = 16
# 800 messages a text. A slot freed 20 ms after its answer had 11% of 640 messages and 18% of
# 1,600 refused: how often a late release is caught hardly depends on the number of rounds.
ROUNDS = 50


@pytest.fixture(scope="module")
def sixteen_slots():
    with InProcessBridge("--max-concurrent", str(CALLERS)) as process:
        yield process


async def keep_alive_caller(url: str, text: str, rounds: int) -> list[dict]:
    """``rounds`` SendMessages, each sent once the last is answered, on one keep-alive
    connection (raw HTTP/1.1: light enough that the callers press the bridge hard)."""
    parsed = httpx.URL(url)
    reader, writer = await asyncio.open_connection(parsed.host, parsed.port)
    replies = []
    try:
        for n in range(rounds):
            body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "SendMessage",
                               "params": {"message": message(text)}}).encode()
            writer.write(f"POST {parsed.raw_path.decode()}/ HTTP/1.1\r\nHost: {parsed.host}\r\n"
                         f"Content-Type: application/json\r\nA2A-Version: 1.0\r\n"
                         f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            replies.append(json.loads(await reader.readexactly(length)))
    finally:
        writer.close()
    return replies


@pytest.mark.parametrize("text", ["hello", "sleep:0"])  # answered on the loop / on a turn thread
def test_callers_keeping_as_many_messages_in_flight_as_there_are_slots_are_never_busy(sixteen_slots, text):
    """Each caller sends its next message once the last one is answered, so together they
    never have more messages in flight than there are slots: the slot must be free when the
    answer is, not a moment later."""
    async def callers():
        return await asyncio.wait_for(asyncio.gather(
            *(keep_alive_caller(sixteen_slots.url, text, ROUNDS) for _ in range(CALLERS))), 120)

    replies = [reply for caller in asyncio.run(callers()) for reply in caller]
    refused = [reply["error"]["message"] for reply in replies if "error" in reply]
    assert not refused, f"{len(refused)} of {len(replies)} refused: {refused[:2]}"
    assert all(state(task_of(reply)) == "TASK_STATE_COMPLETED" for reply in replies)
