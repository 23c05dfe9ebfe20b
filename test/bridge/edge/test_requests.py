"""Bridge: a protocol error for every bad request, never -32603, never a result, never a 500.

Real bridge subprocesses on loopback. The randomized test sends malformed requests from
a seeded generator (``malformed.py``: wrong JSON types, unknown enum names and numbers,
messages not from the user, empty or too many parts, invalid UTF-8, JSON nested 1000
deep, a 5000-digit id ...) over JSON-RPC and HTTP+JSON, and then checks that the bridge
still has every slot free and answers a valid message.
"""
from __future__ import annotations

import base64
import json
import statistics
import threading
import time
import uuid

import httpx
import pytest

from support.bridge_process import BridgeProcess
from support.bridge_rpc import answer, health, jsonrpc_request, message, send, state, task_of
from support.malformed import judge, malformed_requests
from support.waiting import wait_until


V1 = {"A2A-Version": "1.0"}
SEED = 20261130
CASES = 500
BINDINGS = ("jsonrpc", "jsonrpc03", "rest", "grpc")


@pytest.fixture(scope="module")
def one_slot_bridge():
    """An echo bridge with one slot (``--max-concurrent 1``), debug logs and gRPC."""
    with BridgeProcess("--max-concurrent", "1", "--debug", "--grpc-port", "0") as process:
        card = httpx.get(process.root + "/.well-known/agent-card.json", headers=V1, timeout=10).json()
        process.grpc_target = next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
        yield process


def post(bridge: BridgeProcess, content: bytes, path: str = "/", headers=None) -> httpx.Response:
    return httpx.post(bridge.url + path, content=content, timeout=30,
                      headers={**V1, "Content-Type": "application/json", **(headers or {})})


def rpc_bytes(method: str, params, request_id=1) -> bytes:
    """A JSON-RPC request (:func:`~support.bridge_rpc.jsonrpc_request`) as the bytes of its JSON."""
    return json.dumps(jsonrpc_request(method, params, request_id)).encode()


def test_seeded_malformed_requests_are_all_refused_and_the_bridge_stays_free(one_slot_bridge):
    """JSON-RPC with A2A 1.0 and 0.3 methods, HTTP+JSON and gRPC: never -32603, a 5xx, gRPC
    UNKNOWN or INTERNAL, a cut stream or a result."""
    cases = malformed_requests(SEED, CASES, bindings=BINDINGS)
    wrong = []
    with httpx.Client() as client:
        for case in cases:
            try:
                response = case.send(one_slot_bridge.url, client, one_slot_bridge.grpc_target)
            except httpx.HTTPError as exc:  # a connection cut or a stream cut short
                wrong.append(f"cut: {case} -> {exc!r}")
                continue
            verdict = judge(case, response)
            if verdict != "refused":
                wrong.append(f"{verdict}: {case} -> {response.status_code} {response.text[:120]}")
    assert not wrong, (f"seed {SEED}: {len(wrong)} of {len(cases)} malformed requests were not refused:\n"
                       + "\n".join(wrong[:15]))
    assert {c.binding for c in cases} == set(BINDINGS)
    wait_until(lambda: health(one_slot_bridge)["running"] == 0, "0 messages running")
    done = task_of(send(one_slot_bridge.url, message("after the storm")))
    assert state(done) == "TASK_STATE_COMPLETED" and answer(done) == "echo: after the storm"
    assert "Traceback" not in one_slot_bridge.stderr_text()


def deep(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


JSONRPC_TABLE = [
    pytest.param(rpc_bytes("SendMessage", {"message": message("BAD")}).replace(b"BAD", b"\xff\xfe"),
                 -32700, id="invalid-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","metadata":' + deep(1000).encode()
                 + b"}}", -32600, id="nested-1000-deep"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","metadata":' + deep(62).encode()
                 + b"}}", -32600, id="nested-65-deep-in-a-short-body"),
    pytest.param(b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"GetTask","params":{"id":"x"}}', -32600,
                 id="5000-digit-id"),
    pytest.param(rpc_bytes("SendMessage", {"message": message("")}), -32602, id="empty-text-part"),
    pytest.param(rpc_bytes("SendMessage", {"message": {**message("hi"), "role": "ROLE_AGENT"}}), -32602,
                 id="agent-role"),
    pytest.param(rpc_bytes("SendMessage", {"message": {**message("hi"), "role": "ROLE_NOBODY"}}), -32602,
                 id="unknown-role-name"),
    pytest.param(rpc_bytes("ListTasks", {"status": "x"}), -32602, id="list-status-unknown-name"),
    pytest.param(rpc_bytes("ListTasks", {"status": 42}), -32602, id="list-status-unknown-number"),
    pytest.param(rpc_bytes("ListTasks", []), -32602, id="params-an-empty-array"),
    pytest.param(rpc_bytes("SendMessage", {"message": message("hi"), "configuration": []}), -32602,
                 id="configuration-an-array"),
    pytest.param(b'{"jsonrpc":"2.0","id":1,"method":{},"params":{}}', -32600, id="method-an-object"),
]


@pytest.mark.parametrize("content, code", JSONRPC_TABLE)
def test_each_bad_jsonrpc_request_gets_its_protocol_error(one_slot_bridge, content, code):
    response = post(one_slot_bridge, content)
    assert response.status_code == 200, response.text
    error = response.json()["error"]
    assert error["code"] == code, response.text
    assert "Traceback" not in error["message"] and "Exceeds the limit" not in error["message"]


def without(path: str) -> dict:
    """A valid SendMessage request (with a webhook that has credentials) without the field at
    ``path`` (dotted, JSON names)."""
    params = {"message": message("hi"), "configuration": {"taskPushNotificationConfig": {
        "url": "https://example.com/hook", "authentication": {"scheme": "Bearer", "credentials": "t"}}}}
    *parents, last = path.split(".")
    node = params
    for name in parents:
        node = node[name]
    del node[last]
    return params


def required_send_fields() -> list[str]:
    """Every field of SendMessageRequest the A2A proto marks REQUIRED (dotted JSON names),
    as the SDK's generic validation finds them."""
    from google.api.field_behavior_pb2 import FieldBehavior, field_behavior

    from a2a.types import SendMessageRequest

    found = []

    def walk(descriptor, prefix, seen):
        for field in descriptor.fields:
            if FieldBehavior.REQUIRED in field.GetOptions().Extensions[field_behavior]:
                found.append(prefix + field.json_name)
            nested = field.message_type
            if nested is not None and not nested.GetOptions().map_entry and nested.full_name not in seen:
                walk(nested, prefix + field.json_name + ".", seen | {nested.full_name})

    walk(SendMessageRequest.DESCRIPTOR, "", set())
    return found


@pytest.mark.parametrize("path", required_send_fields())
def test_a_send_without_a_required_field_is_refused_with_its_name_and_claims_nothing(one_slot_bridge, path):
    request = without(path)
    response = post(one_slot_bridge, rpc_bytes("SendMessage", request))
    error = response.json()["error"]
    assert error["code"] == -32602, response.text
    assert path.split(".")[-1] in error["message"], error
    wait_until(lambda: health(one_slot_bridge)["running"] == 0, "0 messages running")
    if path.startswith("configuration."):  # the same message without the broken webhook is new work, not a replay
        done = task_of(send(one_slot_bridge.url, request["message"]))
        assert state(done) == "TASK_STATE_COMPLETED" and answer(done) == "echo: hi"


REST_TABLE = [
    pytest.param("POST", "/rest/message:send",
                 json.dumps({"message": message("BAD")}).encode().replace(b"BAD", b"\xff"), "",
                 id="invalid-utf8"),
    pytest.param("POST", "/rest/message:send", b'{"message":' + deep(1000).encode() + b"}", "", id="nested-1000-deep"),
    pytest.param("POST", "/rest/message:send", json.dumps({"message": message("")}).encode(), "",
                 id="empty-text-part"),
    pytest.param("POST", "/rest/message:stream", json.dumps({"message": {**message("hi"), "role": 99}}).encode(), "",
                 id="role-99"),
    pytest.param("GET", "/rest/tasks", None, "status=x", id="list-status-unknown-name"),
    pytest.param("GET", "/rest/tasks", None, "status=42", id="list-status-unknown-number"),
]


@pytest.mark.parametrize("method, path, content, query", REST_TABLE)
def test_each_bad_http_json_request_gets_400_with_an_a2a_error(one_slot_bridge, method, path, content, query):
    response = httpx.request(method, one_slot_bridge.url + path + (f"?{query}" if query else ""), content=content,
                             headers={**V1, "Content-Type": "application/json"}, timeout=30)
    assert response.status_code == 400, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and error["details"][0]["domain"] == "a2a-protocol.org", error


def test_a_message_with_one_part_too_many_is_refused_naming_the_limit(one_slot_bridge):
    parts = [{"text": "x"}] * 101
    response = post(one_slot_bridge, rpc_bytes("SendMessage", {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                                                 "parts": parts}}))
    error = response.json()["error"]
    assert error["code"] == -32602 and "at most 100" in error["message"], error


def structured_send(objects: int) -> bytes:
    """A SendMessage whose metadata is ``objects`` small objects (30,000: about 780 KiB)."""
    metadata = {f"item{n:05d}": {"n": n} for n in range(objects)}
    return rpc_bytes("SendMessage", {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                                "parts": [{"text": "hi"}], "metadata": metadata}})


def test_structured_metadata_over_the_value_limit_is_refused_and_health_answers_meanwhile(one_slot_bridge):
    """Eight callers each sending 780 KiB SendMessages whose metadata is 30,000 small objects
    (about 1.8 s of event-loop time each when the SDK parsed and walked them): each is refused
    with -32600 naming the limit, and /health answers in a fraction of that meanwhile."""
    bodies = [structured_send(30_000) for _ in range(8)]
    assert 750_000 < len(bodies[0]) < 850_000
    codes: list = []

    def sender(body: bytes) -> None:
        with httpx.Client() as client:
            for _ in range(4):
                answer = client.post(one_slot_bridge.url + "/", content=body, timeout=30,
                                     headers={**V1, "Content-Type": "application/json"})
                codes.append((answer.json()["error"]["code"], answer.json()["error"]["message"]))

    senders = [threading.Thread(target=sender, args=(body,)) for body in bodies]
    for thread in senders:
        thread.start()
    latencies = []
    with httpx.Client() as client:
        while any(thread.is_alive() for thread in senders) or len(latencies) < 5:
            started = time.monotonic()
            assert client.get(one_slot_bridge.root + "/health", timeout=10).json()["ok"] is True
            latencies.append(time.monotonic() - started)
    for thread in senders:
        thread.join()
    assert len(codes) == 32 and {code for code, _ in codes} == {-32600}, codes[:3]
    assert "more than 1000 JSON values" in codes[0][1]
    median = statistics.median(latencies)
    # 15-30 ms as a rule, 51 ms at most with three other processes using the two cores, and never half a
    # second (before the limit: seconds)
    assert median < 0.25 and max(latencies) < 0.5, \
        f"/health took {median * 1000:.0f} ms (median), {max(latencies) * 1000:.0f} ms at most, while refused"
    within = structured_send(300)  # 300 objects of 2 values: ~610 values with the envelope
    done = task_of(post(one_slot_bridge, within).json())
    assert answer(done) == "echo: hi"


@pytest.fixture(scope="module")
def one_token_bridge():
    """One Bearer token, with debug logs and messages logged."""
    with BridgeProcess("--debug", "--log-messages", env={"OVOS_A2A_TOKENS": "tok-Zq9x-7Lm"}) as process:
        yield process


def test_a_malformed_basic_credential_is_401_not_500(one_token_bridge):
    for header in (b"Basic \xff\xfe", b"Basic ####", b"Basic " + base64.b64encode(b"\xff\xfe:\xff"), b"Bearer \xff"):
        response = httpx.post(one_token_bridge.url + "/", content=rpc_bytes("GetTask", {"id": "x"}),
                              headers=[(b"Authorization", header), (b"A2A-Version", b"1.0"),
                                       (b"Content-Type", b"application/json")], timeout=10)
        assert response.status_code == 401, (header, response.status_code, response.text)
        assert response.json()["error"]["code"] == -32600
    assert "Traceback" not in one_token_bridge.stderr_text()


def test_debug_logs_hold_no_credential_like_header(one_token_bridge):
    secrets = {"Cookie": "session=cookie-Hv3n-Bq6", "Proxy-Authorization": "Basic proxy-Kp4w-Rr8",
               "X-API-Key": "apikey-Tz7u-Wm2", "X-Auth-Token": "authtok-Lx5c-Qe1",
               "Authorization": "Bearer tok-Zq9x-7Lm"}
    response = httpx.post(one_token_bridge.url + "/", content=rpc_bytes("SendMessage", {"message": message("hi")}),
                          headers={**V1, "Content-Type": "application/json", **secrets}, timeout=30)
    assert response.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", response.text
    log = one_token_bridge.stderr_text()
    assert "DEBUG" in log
    for name, value in secrets.items():
        assert value.split(" ")[-1].split("=")[-1] not in log, f"{name} reached the log"


def test_http_json_routes_without_a_body_still_work(one_slot_bridge):
    """Cancel and subscribe are POSTs with no body: the body checks leave them alone."""
    waiting = httpx.post(one_slot_bridge.url + "/rest/message:send", json={"message": message("ask:which city?")},
                         headers=V1, timeout=30).json()["task"]
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    with httpx.stream("POST", f"{one_slot_bridge.url}/rest/tasks/{waiting['id']}:subscribe", headers=V1,
                      timeout=30) as subscribed:
        assert subscribed.status_code == 200
        first = next(line for line in subscribed.iter_lines() if line.startswith("data:"))
    assert json.loads(first[5:])["task"]["id"] == waiting["id"]
    canceled = httpx.post(f"{one_slot_bridge.url}/rest/tasks/{waiting['id']}:cancel", headers=V1, timeout=30)
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"


def test_a_new_task_has_a_time_and_is_listed_first(one_slot_bridge):
    """A task still submitted has a status timestamp, so ListTasks (newest first) shows it on the first page."""
    for n in range(3):
        send(one_slot_bridge.url, message(f"older {n}"))
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": message("sleep:2"), "configuration": {"returnImmediately": True}}}
    new = httpx.post(one_slot_bridge.url + "/", json=body, headers=V1, timeout=30).json()["result"]["task"]
    assert new["status"].get("timestamp"), new
    listed = httpx.post(one_slot_bridge.url + "/", json={"jsonrpc": "2.0", "id": 2, "method": "ListTasks",
                                               "params": {"pageSize": 1}}, headers=V1, timeout=30).json()
    assert [t["id"] for t in listed["result"]["tasks"]] == [new["id"]], listed
    wait_until(lambda: health(one_slot_bridge)["running"] == 0, "the sleeping turn to end (this module's bridge has one slot)")


V03_MESSAGE = '{"kind":"message","role":"user","messageId":"m-1","parts":[{"kind":"text","text":"hi"}]}'
SURROGATE_TABLE = [
    pytest.param({}, '{"jsonrpc":"2.0","id":"a","method":"message/send","params":{"message":'
                 + V03_MESSAGE.replace('"m-1"', '"m\\ud800"') + '}}', -32602, "a", id="0.3-param"),
    pytest.param({}, '{"jsonrpc":"2.0","id":"a","method":"tasks/get","params":{"id":"\\udfff"}}', -32602, "a",
                 id="0.3-task-id"),
    pytest.param({}, '{"jsonrpc":"2.0","id":"\\ud800","method":"message/stream","params":{"message":'
                 + V03_MESSAGE + '}}', -32600, None, id="0.3-stream-request-id"),
    pytest.param(V1, '{"jsonrpc":"2.0","id":"\\ud800","method":"GetTask","params":{"id":"x"}}', -32600, None,
                 id="1.0-request-id"),
    pytest.param(V1, '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"contextId":"\\ud83d"}}', -32602, 1,
                 id="1.0-first-half-of-a-pair-alone"),
]


@pytest.mark.parametrize("headers, body, code, request_id", SURROGATE_TABLE)
def test_a_lone_surrogate_is_a_protocol_error_on_jsonrpc(one_slot_bridge, headers, body, code, request_id):
    response = httpx.post(one_slot_bridge.url + "/", content=body.encode(), timeout=30,
                          headers={"Content-Type": "application/json", **headers})
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    answered = response.json()
    assert answered["error"]["code"] == code and answered["id"] == request_id, answered
    assert "surrogate" in answered["error"]["message"]


V03_ID_TABLE = [
    pytest.param('{"jsonrpc":"2.0","method":"message/send","params":{"":"not_a_dict"}}', -32602,
                 id="no-id-invalid-params"),
    pytest.param('{"jsonrpc":"2.0","method":"message/send","params":{"message":' + V03_MESSAGE + '}}', -32600,
                 id="no-id-valid-params"),
    pytest.param('{"jsonrpc":"2.0","id":null,"method":"message/send","params":{"":"not_a_dict"}}', -32600,
                 id="null-id-invalid-params"),
    pytest.param('{"jsonrpc":"2.0","id":{"a":1},"method":"message/send","params":{"":"not_a_dict"}}', -32600,
                 id="object-id-invalid-params"),
    pytest.param('{"jsonrpc":"2.0","id":true,"method":"message/send","params":{"message":' + V03_MESSAGE + '}}',
                 -32600, id="boolean-id-valid-params"),
]


@pytest.mark.parametrize("body, code", V03_ID_TABLE)
def test_a_0_3_request_without_an_id_has_its_params_checked(one_slot_bridge, body, code):
    """A2A 0.3 (the TCK's mandatory JSON-RPC test): a missing id is not a null one; its params
    are still checked (-32602), while an id of the wrong type, or null, is an invalid request."""
    response = httpx.post(one_slot_bridge.url + "/", content=body.encode(), timeout=30,
                          headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    answered = response.json()
    assert answered["error"]["code"] == code and answered["id"] is None, answered


def test_a_lone_surrogate_is_400_on_http_json_and_a_pair_is_a_character(one_slot_bridge):
    body = '{"message":{"role":"ROLE_USER","messageId":"m-%s","parts":[{"text":"%s"}]}}'
    refused = httpx.post(one_slot_bridge.url + "/rest/message:send", content=body % (uuid.uuid4().hex, "\\ud800"),
                         headers={**V1, "Content-Type": "application/json"}, timeout=30)
    assert refused.status_code == 400 and "surrogate" in refused.json()["error"]["message"], refused.text
    paired = httpx.post(one_slot_bridge.url + "/rest/message:send", content=body % (uuid.uuid4().hex, "\\ud83d\\ude00"),
                        headers={**V1, "Content-Type": "application/json"}, timeout=30)
    assert paired.status_code == 200 and answer(paired.json()["task"]) == "echo: \U0001F600", paired.text


def grpc_call(bridge: BridgeProcess, method: str, body: bytes):
    import grpc

    with grpc.insecure_channel(bridge.grpc_target) as channel:
        call = channel.unary_unary(f"/lf.a2a.v1.A2AService/{method}", request_serializer=lambda raw: raw,
                                   response_deserializer=lambda raw: raw)
        with pytest.raises(grpc.RpcError) as raised:
            call(body, metadata=(("a2a-version", "1.0"),), timeout=30)
    return raised.value


def test_a_grpc_string_that_is_not_utf8_is_invalid_argument(one_slot_bridge):
    import grpc
    from a2a.types import GetTaskRequest

    body = GetTaskRequest(id="tck-1").SerializeToString().replace(b"tck-", b"\xff\xfe\xfd-")
    error = grpc_call(one_slot_bridge, "GetTask", body)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert "UTF-8" in error.details() and "Unexpected" not in error.details()


def test_a_grpc_message_of_too_many_values_is_invalid_argument_and_one_within_is_answered(one_slot_bridge):
    import grpc
    from a2a.types import SendMessageRequest
    from google.protobuf.json_format import ParseDict

    def request(objects: int) -> bytes:
        msg = {**message("hi"), "metadata": {f"k{n}": {"n": n} for n in range(objects)}}
        return ParseDict({"message": msg}, SendMessageRequest()).SerializeToString()

    error = grpc_call(one_slot_bridge, "SendMessage", request(2000))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert "more than 1000 values" in error.details()
    with grpc.insecure_channel(one_slot_bridge.grpc_target) as channel:
        call = channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage", request_serializer=lambda raw: raw,
                                   response_deserializer=lambda raw: raw)
        assert call(request(300), metadata=(("a2a-version", "1.0"),), timeout=30)


@pytest.mark.parametrize("padding", [0, 5000], ids=["short", "long"])
def test_json_nested_64_deep_is_read_and_65_deep_is_refused_in_short_and_long_bodies(padding):
    """A short body skips the walk that counts values and depth only when it cannot break
    either rule: the limit is the same for short and long bodies."""
    import ovos_a2a_solver.bridge.edge.wire  # noqa: F401  (the SDK's routes first: its modules import in that order)
    from ovos_a2a_solver.bridge.edge.json_rules import MAX_DEPTH, Refusal, load_json

    def body(levels: int) -> bytes:  # the value 1 at depth ``levels``, after a string of ``padding`` characters
        return ('{"pad":"' + "x" * padding + '","a":' + deep(levels - 2) + "}").encode()

    assert load_json(body(MAX_DEPTH), 1000)["a"]
    with pytest.raises(Refusal, match=f"nested deeper than {MAX_DEPTH}"):
        load_json(body(MAX_DEPTH + 1), 1000)
