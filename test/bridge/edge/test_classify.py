"""The edge classifies each request once, at its outermost layer: binding, A2A version asked,
A2A method and id. Every layer inside reads that one classification; a JSON-RPC request's
method and id join it once the wire check read the body, and the access log and the metrics
see each request through one observer.

Requests are made by a real HTTP client (httpx, in process) and go through the bridge's own
edge layers, composed in the bridge's order, in front of a small app that stands where the
a2a-sdk's routes stand and notes the classification it was handed."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from ovos_a2a_solver.bridge.edge.body_limit import BodyLimit
from ovos_a2a_solver.bridge.edge.busy import BusyAnswers
from ovos_a2a_solver.bridge.edge.classify import Binding, ClassifiedRequest, ClassifyRequests, classified
from ovos_a2a_solver.bridge.edge.observer import AnsweredRequest, RequestObserver
from ovos_a2a_solver.bridge.edge.versions import VersionCheck
from ovos_a2a_solver.bridge.edge.wire import WireCheck

BASE = "http://bridge.test"
CARD_PATHS = ["/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json"]
SERVED = {"JSONRPC": ("1.0", "0.3"), "HTTP+JSON": ("1.0", "0.3")}
MESSAGE = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}


def send_message(request_id, method: str = "SendMessage") -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": MESSAGE}}


class CountedClassifier(ClassifyRequests):
    """The bridge's classifier, counting the requests it classifies."""

    def __init__(self, app, **paths) -> None:
        super().__init__(app, **paths)
        self.classified = 0

    def classify(self, scope) -> ClassifiedRequest:
        self.classified += 1
        return super().classify(scope)


class Seen:
    """Where the sdk would be: notes each request's classification and answers 200."""

    def __init__(self) -> None:
        self.requests: list[ClassifiedRequest] = []

    async def __call__(self, scope, receive, send) -> None:
        self.requests.append(classified(scope))
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"jsonrpc": "2.0", "id": 1, "result": {}}'})


class Answered:
    """A sink of the observer: each answered request, outcome wanted."""

    wants_outcome = True

    def __init__(self) -> None:
        self.requests: list[AnsweredRequest] = []

    def answered(self, request: AnsweredRequest) -> None:
        self.requests.append(request)


def edge(inner, sink: Answered | None = None) -> CountedClassifier:
    """The bridge's edge layers in its order (``Bridge._middleware``), credentials aside."""
    app = BusyAnswers(inner)
    app = VersionCheck(app, served=SERVED)
    app = WireCheck(app, max_parts=8, max_values=10_000)
    app = BodyLimit(app, max_body=64 * 1024)
    if sink is not None:
        app = RequestObserver(app, sinks=[sink])
    return CountedClassifier(app, rpc_paths={"/a2a", "/a2a/"}, rest_prefix="/a2a/rest", card_paths=CARD_PATHS)


def call(app, requests: list[tuple[str, str, dict]]) -> list[httpx.Response]:
    """Each (HTTP method, path, httpx keyword arguments), one after the other, through ``app``."""
    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
            return [await client.request(method, path, **kwargs) for method, path, kwargs in requests]

    return asyncio.run(run())


TABLE = [
    # (HTTP method, path, httpx keyword arguments) -> (binding, version asked, method, id)
    (("POST", "/a2a/", {"json": send_message(7), "headers": {"A2A-Version": "1.0"}}),
     (Binding.JSONRPC, b"1.0", "SendMessage", 7)),
    (("POST", "/a2a", {"json": send_message("x-1", "message/send") | {"params": {"message": {
        "kind": "message", "messageId": "m", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}}}),
     (Binding.JSONRPC, None, "message/send", "x-1")),
    (("POST", "/a2a/", {"content": b"{not json", "headers": {"A2A-Version": "1.0"}}),
     (Binding.JSONRPC, b"1.0", None, None)),  # refused by the wire check: no method known
    (("POST", "/a2a/rest/message:send", {"json": {"message": MESSAGE}, "headers": {"A2A-Version": "1.0"}}),
     (Binding.HTTP_JSON, b"1.0", "SendMessage", None)),
    (("GET", "/a2a/rest/tasks/t-1", {"params": {"A2A-Version": "1.0"}}),
     (Binding.HTTP_JSON, "1.0", "GetTask", None)),
    (("GET", "/a2a/rest/tenant-a/tasks", {"headers": {"A2A-Version": "1.0"}}),
     (Binding.HTTP_JSON, b"1.0", "ListTasks", None)),
    (("POST", "/a2a/rest/tasks/t-1:cancel", {"headers": {"A2A-Version": "1.0"}}),
     (Binding.HTTP_JSON, b"1.0", "CancelTask", None)),
    (("DELETE", "/a2a/rest/tasks/t-1/pushNotificationConfigs/c-1", {"headers": {"A2A-Version": "1.0"}}),
     (Binding.HTTP_JSON, b"1.0", "DeleteTaskPushNotificationConfig", None)),
    (("GET", "/a2a/rest/v1/tasks/t-1", {}), (Binding.HTTP_JSON_V03, None, "GetTask", None)),
    (("GET", "/a2a/rest/nothing-here", {"headers": {"A2A-Version": "1.0"}}), (Binding.HTTP_JSON, b"1.0", None, None)),
    (("GET", "/.well-known/agent-card.json", {"headers": {"A2A-Version": "0.3"}}), (Binding.CARD, b"0.3", None, None)),
    (("GET", "/a2a/.well-known/agent-card.json", {}), (Binding.CARD, None, None, None)),
    (("GET", "/health", {}), (Binding.HEALTH, None, None, None)),
    (("GET", "/metrics", {}), (Binding.METRICS, None, None, None)),
    (("GET", "/a2a/elsewhere", {}), (Binding.OTHER, None, None, None)),
]


@pytest.mark.parametrize("request_made, expected", TABLE, ids=[f"{r[0]} {r[1]}" for r, _ in TABLE])
def test_each_binding_is_classified_with_its_version_and_method(request_made, expected):
    seen = Seen()
    app = edge(seen)
    call(app, [request_made])
    if expected[2] is None and expected[0] is Binding.JSONRPC:  # the wire check answered it
        assert seen.requests == []
        return
    binding, version_asked, method, request_id = expected
    assert seen.requests == [ClassifiedRequest(binding, version_asked, method, request_id)]


def test_a_request_is_classified_once_and_every_layer_reads_that():
    seen, sink = Seen(), Answered()
    app = edge(seen, sink)
    answers = call(app, [
        ("POST", "/a2a/", {"json": send_message(1), "headers": {"A2A-Version": "1.0"}}),
        ("POST", "/a2a/", {"json": send_message(2), "headers": {"A2A-Version": "0.3"}}),  # 0.3 asked for 1.0's method
        ("POST", "/a2a/rest/v1/message:send", {"json": {"message": MESSAGE}, "headers": {"A2A-Version": "1.0"}}),
        ("POST", "/a2a/rest/message:send", {"content": b"x" * (64 * 1024 + 1), "headers": {"A2A-Version": "1.0"}}),
        ("GET", "/health", {}),
    ])
    assert app.classified == 5
    # the version check refused by the method and id the wire check put in the classification
    refused = answers[1].json()
    assert refused["id"] == 2 and refused["error"]["code"] == -32009, refused
    # over HTTP+JSON by the path's version (0.3 under /v1), in HTTP+JSON's shape
    assert answers[2].status_code == 400 and "0.3" in answers[2].json()["error"]["message"], answers[2].text
    # the body limit answers in the shape of the classification's binding
    assert answers[3].status_code == 413 and answers[3].json()["error"]["status"] == "INVALID_ARGUMENT"
    assert [request.method for request in seen.requests] == ["SendMessage", None]
    assert [(a.verb, a.target, a.binding, a.version, a.method, a.status, a.outcome) for a in sink.requests] == [
        ("POST", "/a2a/", "JSON-RPC", "1.0", "SendMessage", 200, "ok"),
        ("POST", "/a2a/", "JSON-RPC", "1.0", "SendMessage", 200, "rejected"),
        ("POST", "/a2a/rest/v1/message:send", "HTTP+JSON", "0.3", "SendMessage", 400, "rejected"),
        ("POST", "/a2a/rest/message:send", "HTTP+JSON", "1.0", "SendMessage", 413, "rejected"),
        ("GET", "/health", "HTTP", "-", "-", 200, "ok"),
    ]


def test_a_classification_cannot_be_changed_in_place():
    request = ClassifiedRequest(Binding.JSONRPC, b"1.0")
    with pytest.raises(AttributeError):
        request.method = "SendMessage"  # type: ignore[misc]
    assert request.called("SendMessage", 3) == ClassifiedRequest(Binding.JSONRPC, b"1.0", "SendMessage", 3)
    assert request.method is None
