"""A bridge with every slot taken says "busy" in a form clients retry.

One slot, taken by a slow turn (``sleep:N``). A message meanwhile is refused at once, on
every binding with the status its clients read as "try again later": HTTP 429 with
``Retry-After`` (JSON-RPC 1.0 and 0.3, HTTP+JSON; blocking and streaming; the body stays
the binding's error), gRPC ``RESOURCE_EXHAUSTED`` with a ``RetryInfo``. This package's
client tries again within its deadline, and gets its answer once the slot is free.
"""
from __future__ import annotations

import threading
import time

import httpx
import pytest

from ovos_a2a_solver import A2AClient, RetryPolicy
from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import (HEADERS, grpc_refusal, grpc_retry_info, health, jsonrpc_request, message,
                                send, task_of, v03_message)
from support.waiting import wait_until

SLOW = "sleep:2"


@pytest.fixture(scope="module")
def one_slot_bridge():
    """One slot, gRPC too."""
    with InProcessBridge("--max-concurrent", "1", "--grpc-port", "0") as process:
        yield process


def take_the_slot(bridge: InProcessBridge, text: str = SLOW) -> str:
    """Start a slow turn (it holds the one slot for a while); its task id, once it runs."""
    wait_until(lambda: health(bridge)["running"] == 0, "the slot to be free")
    task = task_of(send(bridge.url, message(text), blocking=False))
    wait_until(lambda: health(bridge)["running"] == 1, "the slow turn to take the slot")
    return task["id"]


def assert_retry_later(response: httpx.Response) -> None:
    assert response.status_code == 429, (response.status_code, response.text)
    assert response.headers["retry-after"] == "1", response.headers
    assert response.headers["content-type"] == "application/json", response.headers  # never a stream


@pytest.mark.parametrize("method, params, headers", [
    ("SendMessage", {"message": message("now?")}, HEADERS),
    ("SendStreamingMessage", {"message": message("now?")}, HEADERS),
    ("message/send", {"message": v03_message("now?")}, {}),
    ("message/stream", {"message": v03_message("now?")}, {}),
], ids=["1.0 send", "1.0 stream", "0.3 send", "0.3 stream"])
def test_jsonrpc_says_busy_with_429_and_retry_after(one_slot_bridge, method, params, headers):
    take_the_slot(one_slot_bridge)
    response = httpx.post(one_slot_bridge.url + "/", json=jsonrpc_request(method, params, "busy-1"), timeout=30,
                          headers={**headers, "Accept": "application/json, text/event-stream"})
    assert_retry_later(response)
    body = response.json()
    assert body["id"] == "busy-1" and body["error"]["code"] == -32603, body  # the JSON-RPC error, as it was
    assert "busy" in body["error"]["message"], body


@pytest.mark.parametrize("verb", ["send", "stream"])
def test_http_json_says_busy_with_429_and_retry_after(one_slot_bridge, verb):
    take_the_slot(one_slot_bridge)
    response = httpx.post(f"{one_slot_bridge.url}/rest/message:{verb}", json={"message": message("now?")},
                          headers=HEADERS, timeout=30)
    assert_retry_later(response)
    error = response.json()["error"]
    assert error["code"] == 429 and error["status"] == "RESOURCE_EXHAUSTED", error
    assert "busy" in error["message"], error


@pytest.mark.parametrize("streaming", [False, True])
def test_grpc_says_busy_with_resource_exhausted_and_retry_info(one_slot_bridge, streaming):
    import grpc

    take_the_slot(one_slot_bridge)

    exc = grpc_refusal(one_slot_bridge.url, "now?", "a busy bridge answered", streaming=streaming)
    call = exc.__cause__
    assert isinstance(call, grpc.aio.AioRpcError), repr(exc)
    assert call.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, call
    assert grpc_retry_info(call).retry_delay.seconds == 1


@pytest.mark.parametrize("streaming", [False, True])
def test_a_second_caller_gets_its_answer_once_the_first_is_done(one_slot_bridge, streaming):
    """The client meets a busy bridge and tries again (honouring Retry-After) within its
    deadline, instead of failing with most of it left."""
    take_the_slot(one_slot_bridge)
    with A2AClient(one_slot_bridge.url, streaming=streaming, timeout=20) as client:
        started = time.monotonic()
        assert client.send_task("second") == "echo: second"
        assert time.monotonic() - started >= 1.0  # it waited for the slot
    assert health(one_slot_bridge)["running"] == 0


def test_a_busy_bridge_is_asked_again_until_the_deadline_not_max_retries_times(one_slot_bridge):
    """Busy for longer than ``max_retries`` tries take (4 s, a try a second): the client
    still waits for the slot, within its deadline."""
    take_the_slot(one_slot_bridge, "sleep:4")
    with A2AClient(one_slot_bridge.url, timeout=20, retries=RetryPolicy(max_retries=1)) as client:
        assert client.send_task("patient") == "echo: patient"


def test_callers_past_the_slots_all_get_their_answers(one_slot_bridge):
    """Three callers at once on one slot: each is answered, one after the other."""
    wait_until(lambda: health(one_slot_bridge)["running"] == 0, "the slot to be free")
    answers: dict[int, str] = {}

    def caller(n: int) -> None:
        with A2AClient(one_slot_bridge.url, timeout=30) as client:
            answers[n] = client.send_task(f"sleep:1 caller {n}")

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == {n: f"echo: sleep:1 caller {n}" for n in range(3)}
