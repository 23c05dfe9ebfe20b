"""A2A 0.3 HTTP+JSON on the bridge, for the 0.3 clients that speak it (a2a-sdk 0.3, the JS SDK 0.3).

The card's 0.3 form names it among its ``additionalInterfaces`` (``{url}/rest``; 0.3's paths
begin with ``/v1``). A genuine a2a-sdk 0.3.26 client, told to speak only HTTP+JSON, sends,
streams, reads and cancels there; and every rule of the bridge's edge holds on those paths
as on the others: the body limit, credentials, the version, the shape of the body, "busy",
and errors before a stream's first event answered as errors, never a cut stream.
"""
from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import health, message, send, task_of
from support.interop import HERE, legacy_python
from support.waiting import wait_until

V03_REST_CLIENT = HERE / "legacy" / "v03_rest_client.py"


@pytest.fixture(scope="module")
def one_slot_bridge_without_grpc():
    """A bridge (echo backend) that runs one message at a time."""
    with InProcessBridge("--max-concurrent", "1") as process:
        yield process


def v03_send_body(parts: list | None = None, text: str = "hi", **ids) -> dict:
    """A 0.3 HTTP+JSON ``message:send`` body (ProtoJSON of 0.3: the parts are ``content``)."""
    msg = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "content": parts or [{"text": text}], **ids}
    return {"message": msg}


def post(bridge, path: str, body, **kwargs) -> httpx.Response:
    return httpx.post(f"{bridge.url}/rest/v1{path}", json=body, timeout=30, **kwargs)


def test_the_card_offers_http_json_to_0_3_clients(one_slot_bridge_without_grpc):
    # no version: the 0.3 form
    card = httpx.get(one_slot_bridge_without_grpc.root + "/.well-known/agent-card.json", timeout=10).json()
    assert card["protocolVersion"] == "0.3" and card["preferredTransport"] == "JSONRPC", card
    rest = {"transport": "HTTP+JSON", "url": one_slot_bridge_without_grpc.url + "/rest"}
    assert rest in card["additionalInterfaces"], card


@pytest.mark.timeout(900)
def test_a_genuine_0_3_client_sends_streams_reads_and_cancels_over_http_json(one_slot_bridge_without_grpc):
    python = legacy_python()  # builds the a2a-sdk 0.3 venv on a cold cache
    done = subprocess.run([python, str(V03_REST_CLIENT), one_slot_bridge_without_grpc.root, "hello over 0.3 REST",
                           "slow:1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["url"] == one_slot_bridge_without_grpc.url + "/rest"
    assert all(p.split(" ", 1)[1].startswith("/a2a/rest/v1/") for p in result["paths"]), result["paths"]
    assert result["send"]["state"] == "completed" and result["send"]["text"] == "echo: hello over 0.3 REST"
    assert result["get"] == {"state": "completed", "text": "echo: hello over 0.3 REST"}
    stream = result["stream"]
    assert stream["state"] == "completed" and stream["text"] == "echo: hello over 0.3 REST", stream
    assert stream["events"][0] == "task" and stream["events"][-1] == "status-update:completed", stream
    assert result["cancel"] == {"state": "canceled"}
    wait_until(lambda: health(one_slot_bridge_without_grpc)["running"] == 0, "the canceled turn to let go of its slot")


def assert_status(response: httpx.Response, status: int, reason: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    assert "text/event-stream" not in response.headers["content-type"], response.text
    assert response.json()["error"]["details"][0]["reason"] == reason, response.text


@pytest.mark.parametrize("verb", ["send", "stream"])
def test_the_edge_rules_hold_on_the_0_3_paths(one_slot_bridge_without_grpc, verb):
    path = f"/message:{verb}"
    assert_status(post(one_slot_bridge_without_grpc, path, v03_send_body(), headers={"A2A-Version": "1.0"}), 400,
                  "VERSION_NOT_SUPPORTED")
    too_large = httpx.post(f"{one_slot_bridge_without_grpc.url}/rest/v1{path}", content=b"x" * (1024 * 1024 + 1),
                           timeout=30)
    assert too_large.status_code == 413, too_large.text
    not_json = httpx.post(f"{one_slot_bridge_without_grpc.url}/rest/v1{path}", content=b"{not json", timeout=30)
    assert_status(not_json, 400, "INVALID_REQUEST")
    wrong_type = post(one_slot_bridge_without_grpc, path, {"message": {**v03_send_body()["message"], "content": "hi"}})
    assert_status(wrong_type, 400, "INVALID_PARAMS")
    assert "message.content must be a list" in wrong_type.json()["error"]["message"], wrong_type.text
    too_many = post(one_slot_bridge_without_grpc, path, v03_send_body([{"text": "hi"}] * 101))
    assert_status(too_many, 400, "INVALID_PARAMS")
    not_in_words = post(one_slot_bridge_without_grpc, path, v03_send_body([{"data": {"data": {"city": "Lisbon"}}}]))
    assert_status(not_in_words, 415, "CONTENT_TYPE_NOT_SUPPORTED")
    unknown_task = post(one_slot_bridge_without_grpc, path, v03_send_body(taskId="no-such-task"))
    assert_status(unknown_task, 404, "TASK_NOT_FOUND")  # a stream too: an error, not a cut stream


@pytest.mark.parametrize("verb", ["send", "stream"])
def test_busy_on_the_0_3_paths_is_429_with_retry_after(one_slot_bridge_without_grpc, verb):
    wait_until(lambda: health(one_slot_bridge_without_grpc)["running"] == 0, "the slot to be free")
    task_of(send(one_slot_bridge_without_grpc.url, message("sleep:2"), blocking=False))
    wait_until(lambda: health(one_slot_bridge_without_grpc)["running"] == 1, "the slow turn to take the slot")
    response = post(one_slot_bridge_without_grpc, f"/message:{verb}", v03_send_body())
    assert response.status_code == 429 and response.headers["retry-after"] == "1", response.text
    assert response.json()["error"]["status"] == "RESOURCE_EXHAUSTED", response.text


def test_credentials_are_asked_on_the_0_3_paths():
    with InProcessBridge(env={"OVOS_A2A_TOKENS": "secret-token"}) as guarded:
        refused = httpx.post(f"{guarded.url}/rest/v1/message:send", json=v03_send_body(), timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED", refused.text
        allowed = httpx.post(f"{guarded.url}/rest/v1/message:send", json=v03_send_body(text="let in"), timeout=30,
                             headers={"Authorization": "Bearer secret-token"})
        assert allowed.status_code == 200, allowed.text
        assert allowed.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED", allowed.text
