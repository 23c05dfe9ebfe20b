"""Bridge: what the official A2A conformance kit checks, on real bridge processes, per binding.

The bridge runs ``--backend scenarios`` (the kit's messageId prefixes pick scripted
scenarios) with gRPC on; every scenario is driven over JSON-RPC, HTTP+JSON and gRPC with
raw calls, so what goes over the wire is exactly what is checked.
"""
from __future__ import annotations

import base64
import json
import time
import uuid

import httpx
import pytest
from google.protobuf.json_format import MessageToDict, ParseDict

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import artifact_text, get_task, message, state, status_text, task_of, v03_message
from support.waiting import WAIT, wait_until


V1 = {"A2A-Version": "1.0"}
BINDINGS = ["jsonrpc", "rest", "grpc"]


@pytest.fixture(scope="module")
def scenarios_bridge():
    """A bridge on the conformance kit's scripted scenarios, with gRPC on (``grpc_target``)."""
    with InProcessBridge("--grpc-port", "0", backend="scenarios") as process:
        card = httpx.get(process.root + "/.well-known/agent-card.json", headers=V1, timeout=10).json()
        process.grpc_target = next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
        yield process


def scenario_message(scenario: str, text: str = "hello", task_id: str = "", context_id: str = "") -> dict:
    """A message whose messageId starts with ``scenario`` (the kit's scenarios are picked by that prefix)."""
    return message(text, f"{scenario}-{uuid.uuid4().hex[:8]}", task_id, context_id)


# ---- one call, three bindings; every answer in ProtoJSON form ----------------------------------------


def _grpc(bridge, method: str, request, metadata=(("a2a-version", "1.0"),)):
    import grpc
    from a2a.types import a2a_pb2_grpc

    channel = grpc.insecure_channel(bridge.grpc_target)
    try:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        answer = getattr(stub, method)(request, metadata=metadata, timeout=WAIT)
        return [MessageToDict(a) for a in answer] if method in ("SendStreamingMessage", "SubscribeToTask") \
            else MessageToDict(answer)
    finally:
        channel.close()


def _sse(response) -> list[dict]:
    events = []
    for line in response.iter_lines():
        if line.startswith("data:"):
            data = json.loads(line[5:])
            events.append(data["result"] if "result" in data else data)
    return events


def send_over(bridge, binding: str, msg: dict, **configuration) -> dict:
    """SendMessage; the SendMessageResponse (``{"task": ...}`` or ``{"message": ...}``)."""
    params = {"message": msg, **({"configuration": configuration} if configuration else {})}
    if binding == "jsonrpc":
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
        response = httpx.post(bridge.url + "/", json=body, headers=V1, timeout=WAIT).json()
        assert "result" in response, response
        return response["result"]
    if binding == "rest":
        response = httpx.post(bridge.url + "/rest/message:send", json=params, headers=V1, timeout=WAIT)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        return response.json()
    from a2a.types import SendMessageRequest
    return _grpc(bridge, "SendMessage", ParseDict(params, SendMessageRequest()))


def stream_over(bridge, binding: str, msg: dict) -> list[dict]:
    """SendStreamingMessage; every StreamResponse in order."""
    params = {"message": msg}
    if binding == "jsonrpc":
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params}
        with httpx.stream("POST", bridge.url + "/", json=body, headers={**V1, "Accept": "text/event-stream"},
                          timeout=WAIT) as response:
            return _sse(response)
    if binding == "rest":
        with httpx.stream("POST", bridge.url + "/rest/message:stream", json=params,
                          headers={**V1, "Accept": "text/event-stream"}, timeout=WAIT) as response:
            assert response.status_code == 200
            return _sse(response)
    from a2a.types import SendMessageRequest
    return _grpc(bridge, "SendStreamingMessage", ParseDict(params, SendMessageRequest()))


def subscribe(bridge, binding: str, task_id: str) -> list[dict]:
    if binding == "jsonrpc":
        body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        with httpx.stream("POST", bridge.url + "/", json=body, headers={**V1, "Accept": "text/event-stream"},
                          timeout=WAIT) as response:
            return _sse(response)
    if binding == "rest":
        with httpx.stream("POST", f"{bridge.url}/rest/tasks/{task_id}:subscribe",
                          headers={**V1, "Accept": "text/event-stream"}, timeout=WAIT) as response:
            assert response.status_code == 200
            return _sse(response)
    from a2a.types import SubscribeToTaskRequest
    return _grpc(bridge, "SubscribeToTask", SubscribeToTaskRequest(id=task_id))


def parts_of(task: dict) -> list[dict]:
    return [p for a in task.get("artifacts", []) for p in a["parts"]]


def states(events: list[dict]) -> list[str]:
    return [e["task"]["status"]["state"] if "task" in e else e["statusUpdate"]["status"]["state"]
            for e in events if "task" in e or "statusUpdate" in e]


def artifact_updates(events: list[dict]) -> list[dict]:
    return [e["artifactUpdate"] for e in events if "artifactUpdate" in e]


# ---- scenarios: blocking -------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_complete_task_ends_completed_with_the_agents_message(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("tck-complete-task"))["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert status_text(task) == "Hello from TCK"
    assert task["status"]["message"]["role"] == "ROLE_AGENT"


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_required_stops_and_takes_a_follow_up(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("tck-input-required"))["task"]
    assert state(task) == "TASK_STATE_INPUT_REQUIRED"
    follow_up = send_over(scenarios_bridge, binding,
                          scenario_message("tck-complete-task", task_id=task["id"], context_id=task["contextId"]))
    assert follow_up["task"]["id"] == task["id"] and state(follow_up["task"]) == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_text_artifact(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("tck-artifact-text"))["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    assert parts_of(task) == [{"text": "Generated text content"}]


@pytest.mark.parametrize("binding", BINDINGS)
def test_file_artifact_has_raw_bytes_media_type_and_filename(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("tck-artifact-file"))["task"]
    assert state(task) == "TASK_STATE_COMPLETED"
    (part,) = parts_of(task)
    assert base64.b64decode(part["raw"]) == b"tck"
    assert part["mediaType"] == "text/plain" and part["filename"] == "output.txt"


@pytest.mark.parametrize("binding", BINDINGS)
def test_file_url_artifact(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("tck-artifact-file-url"))["task"]
    (part,) = parts_of(task)
    assert part == {"url": "https://example.com/output.txt", "mediaType": "text/plain", "filename": "output.txt"}


@pytest.mark.parametrize("binding", BINDINGS)
def test_data_artifact(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("tck-artifact-data"))["task"]
    (part,) = parts_of(task)
    assert part["data"] == {"key": "value", "count": 42}


@pytest.mark.parametrize("binding", BINDINGS)
def test_message_response_is_a_message_and_no_task(scenarios_bridge, binding):
    result = send_over(scenarios_bridge, binding, scenario_message("tck-message-response"))
    assert "task" not in result
    reply = result["message"]
    assert reply["role"] == "ROLE_AGENT" and reply["parts"] == [{"text": "Direct message response"}]
    assert reply["contextId"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_reject_task_ends_rejected(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("tck-reject-task"))["task"]
    assert state(task) == "TASK_STATE_REJECTED"
    assert status_text(task)


@pytest.mark.parametrize("binding", BINDINGS)
def test_any_other_message_is_echoed_and_the_task_stays_open(scenarios_bridge, binding):
    task = send_over(scenarios_bridge, binding, scenario_message("plain", text="good morning"))["task"]
    assert state(task) == "TASK_STATE_INPUT_REQUIRED"
    assert parts_of(task) == [{"text": "echo: good morning"}]
    again = send_over(scenarios_bridge, binding,
                      scenario_message("plain", text="again", task_id=task["id"], context_id=task["contextId"]))
    assert again["task"]["id"] == task["id"] and len(again["task"]["history"]) >= 3


# ---- scenarios: streaming ------------------------------------------------------------------------


def _check_stream(events: list[dict]) -> None:
    """What every stream holds to: the task first, one task, never an artifact update with
    no parts, the last event final."""
    assert "task" in events[0], events[0]
    task_id = events[0]["task"]["id"]
    for event in events[1:]:
        update = event.get("statusUpdate") or event.get("artifactUpdate")
        assert update["taskId"] == task_id
    for update in artifact_updates(events):
        assert update["artifact"]["parts"], update
    assert states(events)[-1] in ("TASK_STATE_COMPLETED", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_FAILED",
                                  "TASK_STATE_REJECTED")


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("prefix, text", [("tck-stream-001", "Stream hello from TCK"),
                                          ("tck-stream-003", "Stream task lifecycle"),
                                          ("tck-stream-ordering-001", "Ordered output"),
                                          ("tck-stream-artifact-text", "Streamed text content")])
def test_stream_working_then_a_text_artifact_then_completed(scenarios_bridge, binding, prefix, text):
    events = stream_over(scenarios_bridge, binding, scenario_message(prefix))
    _check_stream(events)
    assert states(events) == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    kinds = [next(iter(e)) for e in events]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    (update,) = artifact_updates(events)
    assert update["artifact"]["parts"] == [{"text": text}] and update.get("lastChunk") is True


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_002_completes_at_once(scenarios_bridge, binding):
    events = stream_over(scenarios_bridge, binding, scenario_message("tck-stream-002"))
    _check_stream(events)
    assert states(events)[-1] == "TASK_STATE_COMPLETED" and not artifact_updates(events)


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_file_artifact(scenarios_bridge, binding):
    events = stream_over(scenarios_bridge, binding, scenario_message("tck-stream-artifact-file"))
    _check_stream(events)
    (update,) = artifact_updates(events)
    (part,) = update["artifact"]["parts"]
    assert base64.b64decode(part["raw"]) == b"tck" and part["filename"] == "output.txt"
    assert states(events)[-1] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_chunked_artifact_two_appended_chunks(scenarios_bridge, binding):
    events = stream_over(scenarios_bridge, binding, scenario_message("tck-stream-artifact-chunked"))
    _check_stream(events)
    first, second = artifact_updates(events)
    assert first["artifact"]["parts"] == [{"text": "chunk-1 "}] and not first.get("lastChunk")
    assert second["artifact"]["parts"] == [{"text": "chunk-2"}]
    assert second.get("append") is True and second.get("lastChunk") is True
    assert first["artifact"]["artifactId"] == second["artifact"]["artifactId"]
    task = task_of(get_task(scenarios_bridge.url, events[0]["task"]["id"]))
    assert parts_of(task) == [{"text": "chunk-1 "}, {"text": "chunk-2"}]


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_spoken_answer_streams_a_chunk_per_sentence_and_closes_with_an_empty_last_chunk(scenarios_bridge,
                                                                                          binding):
    events = stream_over(scenarios_bridge, binding, scenario_message("plain", text="slow:0.1"))
    _check_stream(events)
    updates = artifact_updates(events)
    texts = ["".join(p.get("text", "") for p in u["artifact"]["parts"]) for u in updates]
    assert texts == ["Sentence 1.", " Sentence 2.", " Sentence 3.", " Sentence 4.", " Sentence 5.", ""], updates
    assert [bool(u.get("lastChunk")) for u in updates] == [False] * 5 + [True]
    assert artifact_text(updates) == "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


@pytest.mark.parametrize("binding", BINDINGS)
def test_resubscribe_scenario_works_for_seconds_then_completes(scenarios_bridge, binding):
    started = time.monotonic()
    task = send_over(scenarios_bridge, binding, scenario_message("test-resubscribe-message-id"),
                     returnImmediately=True)["task"]
    assert state(task) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    wait_until(lambda: state(task_of(get_task(scenarios_bridge.url, task["id"]))), "the task to be working",
               until=lambda s: s == "TASK_STATE_WORKING")
    events = subscribe(scenarios_bridge, binding, task["id"])
    assert states(events)[-1] == "TASK_STATE_COMPLETED"
    assert time.monotonic() - started >= 3.5  # it worked for its 4 s


# ---- errors, per binding -------------------------------------------------------------------------


def test_jsonrpc_wrong_content_type_is_content_type_not_supported(scenarios_bridge):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": {"message": scenario_message("tck-complete-task")}})
    response = httpx.post(scenarios_bridge.url + "/", content=body, headers={**V1, "Content-Type": "text/plain"},
                          timeout=WAIT)
    assert response.json()["error"]["code"] == -32005
    ok = httpx.post(scenarios_bridge.url + "/", content=body,
                    headers={**V1, "Content-Type": "application/json; charset=utf-8"}, timeout=WAIT).json()
    assert "result" in ok, ok


def test_rest_answers_are_application_json_and_cancel_needs_no_body(scenarios_bridge):
    task = send_over(scenarios_bridge, "rest", scenario_message("tck-complete-task"))["task"]
    got = httpx.get(f"{scenarios_bridge.url}/rest/tasks/{task['id']}", headers=V1, timeout=WAIT)
    assert got.status_code == 200 and got.headers["content-type"] == "application/json"
    missing = httpx.post(f"{scenarios_bridge.url}/rest/tasks/no-such-task:cancel", headers=V1, timeout=WAIT)
    assert missing.status_code == 404 and missing.headers["content-type"] == "application/json"
    finished = httpx.post(f"{scenarios_bridge.url}/rest/tasks/{task['id']}:cancel", headers=V1, timeout=WAIT)
    assert finished.status_code == 409, finished.text
    waiting = send_over(scenarios_bridge, "rest", scenario_message("tck-input-required"))["task"]
    canceled = httpx.post(f"{scenarios_bridge.url}/rest/tasks/{waiting['id']}:cancel", headers=V1, timeout=WAIT)
    assert canceled.status_code == 200 and canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"
    subscribed = httpx.post(f"{scenarios_bridge.url}/rest/tasks/no-such-task:subscribe", headers=V1, timeout=WAIT)
    assert subscribed.status_code == 404


def _v03(bridge, method: str, params, request_id="r-1") -> dict:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return httpx.post(bridge.url + "/", json=body, timeout=WAIT).json()


@pytest.mark.parametrize("params", [{"message": {"parts": "invalid"}}, {"message": {"kind": "message"}},
                                    {"": "not_a_dict"}])
def test_v03_invalid_params_are_32602_with_the_request_id(scenarios_bridge, params):
    response = _v03(scenarios_bridge, "message/send", params)
    assert response["error"]["code"] == -32602 and response["id"] == "r-1", response


def test_v03_plain_message_task_continues_cancels_and_honours_history_length(scenarios_bridge):
    first = _v03(scenarios_bridge, "message/send", {"message": v03_message("one")})
    task = first["result"]
    assert first["id"] == "r-1" and task["status"]["state"] == "input-required"
    for n in range(2):
        more = _v03(scenarios_bridge, "message/send", {"message": v03_message(f"more {n}", taskId=task["id"])})
        assert more["result"]["id"] == task["id"], more
    short = _v03(scenarios_bridge, "message/send", {"message": v03_message("last", taskId=task["id"]),
                                          "configuration": {"historyLength": 1}})
    assert len(short["result"]["history"]) == 1, short
    full = _v03(scenarios_bridge, "tasks/get", {"id": task["id"]})["result"]
    assert len(full["history"]) > 1
    canceled = _v03(scenarios_bridge, "tasks/cancel", {"id": task["id"]})
    assert canceled["id"] == "r-1" and canceled["result"]["status"]["state"] == "canceled", canceled
