"""Bridge: which A2A version a request speaks, decided by one rule on every binding (A2A 1.0 §3.6).

Major.Minor counts, a patch number does not; no version (or an empty one) is 0.3; a version
a binding does not serve is VersionNotSupported: JSON-RPC -32009, HTTP+JSON 400 and gRPC
FAILED_PRECONDITION, each with the ErrorInfo reason VERSION_NOT_SUPPORTED. The bridge
serves 1.0 on every binding and 0.3 on JSON-RPC and HTTP+JSON, as its card says. One real bridge process
with gRPC on; a request the version lets through asks for a task that does not exist, so
"served" is TaskNotFound.
"""
from __future__ import annotations

import httpx
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import post_jsonrpc
from support.waiting import WAIT

from ovos_a2a_solver.bridge.edge.versions import requested_version

SERVED, REFUSED = "served", "refused"


@pytest.fixture(scope="module")
def grpc_bridge():
    """An echo bridge with gRPC beside JSON-RPC and HTTP+JSON, and what its card offers."""
    with InProcessBridge("--grpc-port", "0") as process:
        card = httpx.get(process.root + "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"},
                         timeout=10).json()
        process.interfaces = [(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]]
        process.grpc_target = next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
        yield process


@pytest.mark.parametrize("value, version", [("1.0", "1.0"), (" 1.0.3 ", "1.0"), ("1.1", "1.1"), ("0.3", "0.3"),
                                            ("0.3.0", "0.3"), ("", "0.3"), (None, "0.3"), (b"2.0", "2.0")])
def test_the_version_is_major_minor_and_none_is_0_3(value, version):
    assert requested_version(value) == version


def test_the_card_offers_what_the_bindings_serve(grpc_bridge):
    assert sorted(grpc_bridge.interfaces) == [("GRPC", "1.0"), ("HTTP+JSON", "0.3"), ("HTTP+JSON", "1.0"),
                                              ("JSONRPC", "0.3"), ("JSONRPC", "1.0")]


def get_missing_task(grpc_bridge, method: str, headers: dict, query: str = "", request_id="v-1") -> dict:
    """The JSON-RPC response to ``method`` (GetTask or tasks/get) asking for a task that does not exist."""
    response = post_jsonrpc(grpc_bridge.url, method, {"id": "no-such-task"}, headers, query, request_id, WAIT)
    assert response.status_code == 200, response.text
    return response.json()


JSONRPC_CASES = [
    ("GetTask", {"A2A-Version": "1.0"}, "", SERVED),
    ("GetTask", {"A2A-Version": "1.0.3"}, "", SERVED),
    ("GetTask", {}, "?A2A-Version=1.0", SERVED),
    ("GetTask", {}, "", REFUSED),
    ("GetTask", {"A2A-Version": ""}, "", REFUSED),
    ("GetTask", {"A2A-Version": "0.9"}, "", REFUSED),
    ("GetTask", {"A2A-Version": "1.1"}, "", REFUSED),
    ("GetTask", {"A2A-Version": "2.0"}, "", REFUSED),
    ("GetTask", {"A2A-Version": "one"}, "", REFUSED),
    ("tasks/get", {}, "", SERVED),
    ("tasks/get", {"A2A-Version": "0.3"}, "", SERVED),
    ("tasks/get", {"A2A-Version": "0.3.5"}, "", SERVED),
    ("tasks/get", {}, "?A2A-Version=0.3", SERVED),
    ("tasks/get", {"A2A-Version": "1.0"}, "", REFUSED),
    ("tasks/get", {}, "?A2A-Version=1.0", REFUSED),
    ("tasks/get", {"A2A-Version": "0.9"}, "", REFUSED),
    ("tasks/get", {"A2A-Version": "2.0"}, "", REFUSED),
]


@pytest.mark.parametrize("method, headers, query, expected", JSONRPC_CASES)
def test_jsonrpc_version(grpc_bridge, method, headers, query, expected):
    response = get_missing_task(grpc_bridge, method, headers, query)
    assert response["id"] == "v-1", response
    if expected == SERVED:
        assert response["error"]["code"] == -32001, response  # TaskNotFound: it reached the handler
    else:
        error = response["error"]
        assert error["code"] == -32009, response
        assert error["data"][0]["reason"] == "VERSION_NOT_SUPPORTED", response


def test_a_0_3_method_with_a_null_id_is_an_invalid_request(grpc_bridge):
    response = get_missing_task(grpc_bridge, "tasks/get", {}, request_id=None)
    assert response["error"]["code"] == -32600 and "needs an id" in response["error"]["message"], response


V1_PATH, V03_PATH = "/tasks/no-such-task", "/v1/tasks/no-such-task"  # A2A 0.3's paths begin with /v1
REST_CASES = [
    (V1_PATH, {"A2A-Version": "1.0"}, "", SERVED),
    (V1_PATH, {"A2A-Version": "1.0.7"}, "", SERVED),
    (V1_PATH, {}, "?A2A-Version=1.0", SERVED),
    (V1_PATH, {"A2A-Version": "1.0"}, "?A2A-Version=2.0", SERVED),  # the header wins
    (V1_PATH, {}, "", REFUSED),
    (V1_PATH, {"A2A-Version": "0.3"}, "", REFUSED),  # a 1.0 path
    (V1_PATH, {"A2A-Version": "0.9"}, "", REFUSED),
    (V1_PATH, {"A2A-Version": "2.0"}, "", REFUSED),
    (V1_PATH, {}, "?A2A-Version=2.0", REFUSED),
    (V03_PATH, {}, "", SERVED),
    (V03_PATH, {"A2A-Version": "0.3"}, "", SERVED),
    (V03_PATH, {}, "?A2A-Version=0.3", SERVED),
    (V03_PATH, {"A2A-Version": "1.0"}, "", REFUSED),  # a 0.3 path
    (V03_PATH, {"A2A-Version": "2.0"}, "", REFUSED),
]


@pytest.mark.parametrize("path, headers, query, expected", REST_CASES)
def test_http_json_version(grpc_bridge, path, headers, query, expected):
    response = httpx.get(f"{grpc_bridge.url}/rest{path}{query}", headers=headers, timeout=WAIT)
    if expected == SERVED:
        assert response.status_code == 404, response.text
    else:
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert error["status"] == "FAILED_PRECONDITION", error
        assert error["details"][0]["reason"] == "VERSION_NOT_SUPPORTED", error


def grpc_get_task(grpc_bridge, metadata) -> "grpc.RpcError":
    import grpc
    from a2a.types import GetTaskRequest, a2a_pb2_grpc

    with grpc.insecure_channel(grpc_bridge.grpc_target) as channel:
        with pytest.raises(grpc.RpcError) as raised:
            a2a_pb2_grpc.A2AServiceStub(channel).GetTask(GetTaskRequest(id="no-such-task"), metadata=metadata,
                                                         timeout=WAIT)
    return raised.value


def error_info_reason(error) -> str:
    """The ErrorInfo reason in a gRPC error's ``google.rpc.Status`` details."""
    from google.rpc import error_details_pb2, status_pb2

    details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin")
    assert details is not None, error
    status = status_pb2.Status.FromString(details)
    info = error_details_pb2.ErrorInfo()
    assert status.details and status.details[0].Unpack(info), status
    return info.reason


GRPC_CASES = [
    ((("a2a-version", "1.0"),), SERVED),
    ((("a2a-version", "1.0.3"),), SERVED),
    ((), REFUSED),
    ((("a2a-version", ""),), REFUSED),
    ((("a2a-version", "0.3"),), REFUSED),  # no 0.3 over gRPC: the card offers none
    ((("a2a-version", "0.9"),), REFUSED),
    ((("a2a-version", "2.0"),), REFUSED),
]


@pytest.mark.parametrize("metadata, expected", GRPC_CASES)
def test_grpc_version(grpc_bridge, metadata, expected):
    import grpc

    error = grpc_get_task(grpc_bridge, metadata)
    if expected == SERVED:
        assert error.code() == grpc.StatusCode.NOT_FOUND, error
    else:
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION, error
        assert error_info_reason(error) == "VERSION_NOT_SUPPORTED"


def test_grpc_streaming_call_in_an_unserved_version_is_refused_too(grpc_bridge):
    import grpc
    from a2a.types import SubscribeToTaskRequest, a2a_pb2_grpc

    with grpc.insecure_channel(grpc_bridge.grpc_target) as channel:
        with pytest.raises(grpc.RpcError) as raised:
            list(a2a_pb2_grpc.A2AServiceStub(channel).SubscribeToTask(
                SubscribeToTaskRequest(id="no-such-task"), metadata=(("a2a-version", "2.0"),), timeout=WAIT))
    assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_info_reason(raised.value) == "VERSION_NOT_SUPPORTED"
