"""Raw A2A JSON-RPC 1.0 calls for bridge tests: exact control over ids and duplicates; A2A
0.3 messages (``v03_message``) and gRPC calls through the a2a-sdk (``grpc_client``,
``grpc_refusal``) beside them.

Tasks here are the JSON (ProtoJSON) dicts the wire carries: ``state(task)``,
``answer(task)`` and ``status_text(task)`` read them; ``task_of(response)`` takes the task
out of a JSON-RPC response.
"""
from __future__ import annotations

import contextlib
import json
import uuid

import httpx

from support.waiting import WAIT, wait_until

HEADERS = {"A2A-Version": "1.0"}


def message(text: str, message_id: str | None = None, task_id: str = "", context_id: str = "") -> dict:
    """A user message with one text part (a fresh messageId unless given)."""
    msg = {"role": "ROLE_USER", "messageId": message_id or uuid.uuid4().hex, "parts": [{"text": text}]}
    if task_id:
        msg["taskId"] = task_id
    if context_id:
        msg["contextId"] = context_id
    return msg


def v03_message(text: str, **ids: str) -> dict:
    """An A2A 0.3 user message (``kind`` "message") with one text part and a fresh messageId;
    ``ids`` adds fields such as ``taskId`` or ``contextId``."""
    return {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
            "parts": [{"kind": "text", "text": text}], **ids}


#: the ``request_id`` that asks :func:`jsonrpc_request` for a fresh random id (None sends a null id)
NEW_ID = object()


def jsonrpc_request(method: str, params: dict, request_id=NEW_ID) -> dict:
    """A JSON-RPC request object with ``request_id`` as its id (by default a fresh one)."""
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex if request_id is NEW_ID else request_id, "method": method,
            "params": params}


def post_jsonrpc(url: str, method: str, params: dict, headers: dict | None = None, query: str = "",
                 request_id=NEW_ID, timeout: float = 30) -> httpx.Response:
    """POST one JSON-RPC request to ``url + "/" + query`` with ``headers`` (:data:`HEADERS`, A2A
    1.0, unless given); the HTTP response, whatever its status."""
    return httpx.post(url + "/" + query, json=jsonrpc_request(method, params, request_id),
                      headers=HEADERS if headers is None else headers, timeout=timeout)


def rpc(url: str, method: str, params: dict, timeout: float = 60, auth=None) -> dict:
    """One JSON-RPC call; returns the whole response object (``result`` or ``error``)."""
    response = httpx.post(url + "/", json=jsonrpc_request(method, params), headers=HEADERS, timeout=timeout,
                          auth=auth)
    assert response.status_code == 200, response.text
    return response.json()


def send(url: str, msg: dict, blocking: bool = True, timeout: float = 60) -> dict:
    """SendMessage (``blocking=False``: return at once); the whole JSON-RPC response."""
    params = {"message": msg}
    if not blocking:
        params["configuration"] = {"returnImmediately": True}
    return rpc(url, "SendMessage", params, timeout)


def stream(url: str, msg: dict, timeout: float = 60) -> list[dict]:
    """SendStreamingMessage; every event's ``result`` in order (an ``error`` event ends the list)."""
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendStreamingMessage", "params": {"message": msg}}
    events = []
    with httpx.stream("POST", url + "/", json=body, headers={**HEADERS, "Accept": "text/event-stream"},
                      timeout=timeout) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                data = json.loads(line[5:])
                events.append(data.get("result") or {"error": data.get("error")})
    return events


def health(bridge) -> dict:
    """``GET /health`` of ``bridge`` (a :class:`~support.bridge_process.BridgeProcess`), checked to be 200."""
    response = httpx.get(bridge.root + "/health", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def get_task(url: str, task_id: str) -> dict:
    """GetTask; the whole JSON-RPC response (``task_of`` takes the task out)."""
    return rpc(url, "GetTask", {"id": task_id})


def wait_for_task(url: str, task_id: str, until, what: str, timeout: float = WAIT) -> dict:
    """Poll GetTask until ``until(task)``; the task. Fails naming ``what`` and the last task seen."""
    return wait_until(lambda: task_of(get_task(url, task_id)), f"task {task_id} {what}", timeout=timeout,
                      until=until)


def wait_for_state(url: str, task_id: str, wanted: str, timeout: float = WAIT) -> dict:
    """Poll GetTask until the task is in state ``wanted`` (e.g. ``TASK_STATE_COMPLETED``); the task."""
    return wait_for_task(url, task_id, lambda task: state(task) == wanted, f"to be {wanted}", timeout)


def cancel(url: str, task_id: str) -> dict:
    """CancelTask; the whole JSON-RPC response."""
    return rpc(url, "CancelTask", {"id": task_id})


def task_of(response: dict) -> dict:
    """The task of a JSON-RPC response (a SendMessage result's ``task``, or the result itself)."""
    assert "result" in response, response
    return response["result"]["task"] if "task" in response["result"] else response["result"]


def state(task: dict) -> str:
    """The task's state name, e.g. ``TASK_STATE_COMPLETED``."""
    return task["status"]["state"]


def artifact_text(updates: list[dict]) -> str:
    """The text of an artifact streamed as ``updates`` (``artifactUpdate`` objects), each applied
    as A2A says: appended when ``append``, else replacing what came before."""
    text = ""
    for update in updates:
        chunk = "".join(p.get("text", "") for p in update["artifact"].get("parts", []))
        text = text + chunk if update.get("append") else chunk
    return text


def answer(task: dict) -> str:
    """The text of all the task's artifacts, joined."""
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


def proto_answer(task) -> str:
    """The text of all the artifacts of an a2a-sdk ``Task`` (the protobuf message its clients
    return), joined: :func:`answer` for the SDK's own tasks."""
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


def status_text(task: dict) -> str:
    """The text of the status message of ``task`` (or of a ``statusUpdate``); '' without one."""
    message = (task.get("status") or {}).get("message") or {}
    return "".join(p.get("text", "") for p in message.get("parts", []))


@contextlib.asynccontextmanager
async def grpc_client(url: str, streaming: bool = False):
    """An a2a-sdk 1.x client bound to the gRPC interface on the card of the bridge at ``url``."""
    import grpc
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

    async with httpx.AsyncClient(timeout=30) as hc:
        card = await A2ACardResolver(hc, url).get_agent_card()
    assert any(i.protocol_binding == "GRPC" for i in card.supported_interfaces), "the card names no gRPC interface"
    config = ClientConfig(streaming=streaming, supported_protocol_bindings=["GRPC"],
                          grpc_channel_factory=lambda target: grpc.aio.insecure_channel(target))
    client = ClientFactory(config).create(card)
    try:
        yield client
    finally:
        await client.close()


def grpc_refusal(url: str, text: str, answered: str, streaming: bool = False) -> Exception:
    """Send ``text`` over gRPC (:func:`grpc_client`) to the bridge at ``url``: the a2a-sdk's error
    that refused it, whose ``__cause__`` is the gRPC call's. A message answered fails the test,
    saying ``answered``."""
    import asyncio

    from a2a.types import Message, Part, Role, SendMessageRequest

    async def refusal() -> Exception:
        async with grpc_client(url, streaming=streaming) as client:
            msg = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
            try:
                async for _ in client.send_message(SendMessageRequest(message=msg)):
                    pass
            except Exception as exc:  # noqa: BLE001 - the cause is what is looked at
                return exc
        raise AssertionError(answered)

    return asyncio.run(refusal())


def grpc_retry_info(call):
    """The ``RetryInfo`` among the details of the refused gRPC ``call`` (a
    ``grpc.aio.AioRpcError``); a call without one fails the test."""
    from a2a.utils.grpc_status import status_from_call
    from google.rpc import error_details_pb2

    retry = error_details_pb2.RetryInfo()
    details = status_from_call(call).details
    assert any(d.Unpack(retry) for d in details if d.Is(error_details_pb2.RetryInfo.DESCRIPTOR)), details
    return retry


class OwnerCalls:
    """JSON-RPC 1.0 calls to one bridge as the owner of ``token`` (a bearer token)."""

    def __init__(self, bridge, token: str) -> None:
        self.bridge = bridge
        self.url = bridge.url + "/"
        self.headers = {**HEADERS, "Authorization": f"Bearer {token}"}

    def _http(self):
        """What sends the requests: ``httpx`` itself (a connection each), or a client."""
        return httpx

    def call(self, method: str, params: dict) -> dict:
        response = self._http().post(self.url, json=jsonrpc_request(method, params), headers=self.headers, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()

    def send(self, msg: dict, blocking: bool = True) -> dict:
        params = {"message": msg}
        if not blocking:
            params["configuration"] = {"returnImmediately": True}
        return self.task("SendMessage", params)

    def get(self, task_id: str) -> dict:
        return self.task("GetTask", {"id": task_id})

    def where(self) -> str:
        """Where the calls go, as a failed wait names it."""
        return f"read on {self.url}"

    def wait_for_state(self, task_id: str, wanted: str, timeout: float = 30) -> dict:
        """Poll GetTask until the task is in state ``wanted``; the task. Fails after ``timeout``."""
        return wait_until(lambda: self.get(task_id), f"task {task_id} to be {wanted} ({self.where()})",
                          timeout=timeout, until=lambda task: state(task) == wanted)

    def subscribe(self, task_id: str) -> list[dict]:
        """SubscribeToTask: every event's ``result`` until the stream ends (an error refused
        before the stream began is a plain JSON-RPC response)."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        events = []
        with self._http().stream("POST", self.url, json=body, timeout=60,
                                 headers={**self.headers, "Accept": "text/event-stream"}) as response:
            for line in response.iter_lines():
                data = json.loads(line[5:]) if line.startswith("data:") else (json.loads(line) if line else None)
                if data is not None:
                    events.append(data.get("result") or {"error": data.get("error")})
        return events

    def task(self, method: str, params: dict) -> dict:
        reply = self.call(method, params)
        assert "result" in reply, reply
        return reply["result"].get("task", reply["result"])

    def error(self, method: str, params: dict) -> dict:
        reply = self.call(method, params)
        assert "error" in reply, reply
        return reply["error"]


PIN_TRIES = 200  # connections opened, at most, to reach one chosen worker


class Worker(OwnerCalls):
    """JSON-RPC 1.0 calls to one chosen worker of a bridge with ``--workers``, as one owner.

    The kernel spreads connections over the workers; this keeps a keep-alive connection
    that ``/health`` (asked on that same connection, before every call) says worker
    ``number`` serves, opening new ones until one does."""

    def __init__(self, bridge, number: int, token: str) -> None:
        super().__init__(bridge, token)
        self.number = number
        self.client: httpx.Client | None = None

    def where(self) -> str:
        return f"on worker {self.number}"

    def _pinned(self) -> httpx.Client:
        """A client whose keep-alive connection is served by this worker (checked now)."""
        for _ in range(PIN_TRIES):
            if self.client is None:
                self.client = httpx.Client(timeout=60, limits=httpx.Limits(max_connections=1))
            if self.client.get(self.bridge.root + "/health").json().get("worker") == self.number:
                return self.client
            self.client.close()
            self.client = None
        raise AssertionError(f"no connection reached worker {self.number} in {PIN_TRIES} tries")

    def _http(self) -> httpx.Client:
        return self._pinned()

    def running(self) -> int:
        return self._pinned().get(self.bridge.root + "/health").json()["running"]

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
