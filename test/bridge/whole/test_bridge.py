"""The bridge (``ovos-a2a serve``) end to end: a real bridge process on loopback, the echo
backend behind it, and real clients in front of it (the a2a-sdk 1.x client over each
binding, raw HTTP, and a genuine a2a-sdk 0.3 client in its own interpreter).

Echo backend commands used here: ``sleep:N``, ``slow:N`` (five sentences N s apart),
``ask:Q`` (input-required), ``fail``, ``empty``, ``remember X`` / ``recall``.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
import socket
import statistics
import subprocess
import threading
import time
import uuid

import httpx
import pytest
from google.protobuf.json_format import MessageToDict
from a2a.client import A2ACardResolver, A2AClientError, ClientConfig, ClientFactory
from a2a.types import (AgentCard, GetTaskRequest, ListTasksRequest, Message, Part, Role, SendMessageRequest, Task,
                       TaskState)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotFoundError

from ovos_a2a_solver.bridge.edge.card import card_version
from ovos_a2a_solver.version import __version__

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, BridgeStartError
from support.bridge_rpc import health, proto_answer
from support.interop import LEGACY_CLIENT_SCRIPT, legacy_python
from support.waiting import WAIT, wait_until


V1 = {"A2A-Version": "1.0"}
JSONRPC = TransportProtocol.JSONRPC
REST = TransportProtocol.HTTP_JSON
BINDINGS = [pytest.param(JSONRPC, id="jsonrpc"), pytest.param(REST, id="rest")]

# distinctive secrets, so that finding one in the logs cannot be a coincidence
PASSWORD = "pw-Zq9x-7Lm"
TOKEN_1 = "tok1-Kp4w-Rr8"
TOKEN_2 = "tok2-Hv3n-Bq6"
BASIC = httpx.BasicAuth("a2a", PASSWORD)
BEARER_1 = {"Authorization": f"Bearer {TOKEN_1}"}
BEARER_2 = {"Authorization": f"Bearer {TOKEN_2}"}

# ---------------------------------------------------------------------------------------
# helpers


def user_message(text: str, **ids) -> Message:
    return Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)], **ids)


def proto_status_text(status) -> str:
    """The text of a protobuf TaskStatus's message (the a2a-sdk client's tasks)."""
    return "".join(p.text for p in status.message.parts)


def state_name(state: int) -> str:
    return TaskState.Name(state)


async def fetch_card(url: str, hc: httpx.AsyncClient) -> AgentCard:
    return await A2ACardResolver(hc, url).get_agent_card()


def only_interface(card: AgentCard, binding: str, version: str) -> AgentCard:
    """A copy of ``card`` that offers only the one interface, so the client cannot pick another."""
    chosen = [i for i in card.supported_interfaces
              if i.protocol_binding == binding and i.protocol_version == version]
    assert len(chosen) == 1, f"the card has no single {binding} {version} interface: {card.supported_interfaces}"
    narrowed = AgentCard()
    narrowed.CopyFrom(card)
    del narrowed.supported_interfaces[:]
    narrowed.supported_interfaces.append(chosen[0])
    return narrowed


@contextlib.asynccontextmanager
async def sdk_client(url: str, *, binding: str = JSONRPC, version: str = "1.0", streaming: bool = False,
                     auth=None, headers=None):
    """An a2a-sdk 1.x client bound to exactly one of the bridge's interfaces."""
    hc = httpx.AsyncClient(timeout=30, auth=auth, headers=headers)
    try:
        card = only_interface(await fetch_card(url, hc), binding, version)
        client = ClientFactory(ClientConfig(httpx_client=hc, streaming=streaming,
                                            supported_protocol_bindings=[binding])).create(card)
        try:
            yield client
        finally:
            await client.close()
    finally:
        await hc.aclose()


async def send_blocking(client, message: Message) -> Task:
    results = [r async for r in client.send_message(SendMessageRequest(message=message))]
    assert len(results) == 1, results
    assert results[0].WhichOneof("payload") == "task", results[0]
    return results[0].task


async def send_stream(client, message: Message) -> list:
    return [r async for r in client.send_message(SendMessageRequest(message=message))]


def ask(url: str, text: str, *, binding: str = JSONRPC, auth=None, headers=None, **ids) -> Task:
    """One blocking SendMessage; the resulting Task."""
    async def go():
        async with sdk_client(url, binding=binding, auth=auth, headers=headers) as client:
            return await send_blocking(client, user_message(text, **ids))
    return asyncio.run(go())


def sdk_get_task(url: str, task_id: str, *, auth=None, headers=None) -> Task:
    """GetTask through an a2a-sdk client; the protobuf Task."""
    async def go():
        async with sdk_client(url, auth=auth, headers=headers) as client:
            return await client.get_task(GetTaskRequest(id=task_id))
    return asyncio.run(go())


def list_tasks(url: str, request: ListTasksRequest, *, auth=None, headers=None):
    async def go():
        async with sdk_client(url, auth=auth, headers=headers) as client:
            return await client.list_tasks(request)
    return asyncio.run(go())


def post_jsonrpc_body(url: str, body, *, headers=None, auth=None, content: bytes | None = None) -> httpx.Response:
    """A raw JSON-RPC POST (``body`` as JSON, or ``content`` as it is); the HTTP response."""
    all_headers = {"Content-Type": "application/json", **V1, **(headers or {})}
    data = content if content is not None else json.dumps(body).encode()
    return httpx.post(url, content=data, headers=all_headers, auth=auth, timeout=30)


class Background:
    """Run ``coro_fn()`` in its own thread and event loop; ``result()`` joins it."""

    def __init__(self, coro_fn) -> None:
        self._value = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(coro_fn,), daemon=True)
        self._thread.start()

    def _run(self, coro_fn) -> None:
        try:
            self._value = asyncio.run(coro_fn())
        except BaseException as exc:  # re-raised in result()
            self._error = exc

    def result(self, timeout: float = WAIT):
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the background request did not finish"
        if self._error is not None:
            raise self._error
        return self._value


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent for UDP connect
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


# ---------------------------------------------------------------------------------------
# fixtures: bridges whose flags differ from the session's ``bridge``


@pytest.fixture(scope="module")
def password_and_tokens_bridge():
    """Password (Basic user ``a2a``) and two Bearer tokens, on 127.0.0.1, with debug logs."""
    env = {"OVOS_A2A_PASSWORD": PASSWORD, "OVOS_A2A_TOKENS": f"{TOKEN_1},{TOKEN_2}"}
    with BridgeProcess("--debug", "--log-messages", env=env) as process:
        yield process


# ---------------------------------------------------------------------------------------
# 1. the card and /health


CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json", "/a2a/.well-known/agent-card.json")


LEGACY_FIELDS = {"url", "protocolVersion", "preferredTransport", "additionalInterfaces"}


def test_card_served_at_every_well_known_path(echo_bridge):
    cards = []
    for path in CARD_PATHS:
        response = httpx.get(echo_bridge.root + path, timeout=10)
        assert response.status_code == 200, (path, response.status_code, response.text)
        cards.append(response.json())
    assert cards[0]["name"] == "echo"
    assert all(card == cards[0] for card in cards[1:])


V1_FIELDS = {"name", "description", "supportedInterfaces", "provider", "version", "documentationUrl",
             "capabilities", "securitySchemes", "securityRequirements", "defaultInputModes",
             "defaultOutputModes", "skills", "signatures", "iconUrl"}


@pytest.mark.parametrize("path", CARD_PATHS)
@pytest.mark.parametrize("ask", [{"headers": {"A2A-Version": "1.0"}}, {"params": {"A2A-Version": "1.0"}}],
                         ids=["header", "query"])
def test_a_1_0_client_gets_the_pure_1_0_card_a_0_3_client_the_hybrid(echo_bridge, path, ask):
    pure = httpx.get(echo_bridge.root + path, timeout=10, **ask).json()
    assert set(pure) <= V1_FIELDS, set(pure) - V1_FIELDS  # the A2A 1.0 schema allows nothing else
    hybrid = httpx.get(echo_bridge.root + path, timeout=10).json()  # no A2A-Version: a 0.3 client
    assert LEGACY_FIELDS <= hybrid.keys()
    assert {k: v for k, v in hybrid.items() if k not in LEGACY_FIELDS} == pure
    assert hybrid == httpx.get(echo_bridge.root + path, headers={"A2A-Version": "0.3"}, timeout=10).json()


@pytest.mark.parametrize("path", CARD_PATHS)
@pytest.mark.parametrize("version", ["1.0", None])
def test_card_caching_headers_and_304(echo_bridge, path, version):
    url = echo_bridge.root + path
    first = httpx.get(url, headers={"A2A-Version": version} if version else {}, timeout=10)
    assert first.headers["vary"] == "A2A-Version"
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    assert first.headers["cache-control"] == "max-age=300"
    asked = {"A2A-Version": version} if version else {}

    def status(**headers):
        return httpx.get(url, headers={**asked, **headers}, timeout=10).status_code

    assert status(**{"If-None-Match": etag}) == 304
    assert status(**{"If-None-Match": '"other", ' + etag}) == 304
    assert status(**{"If-None-Match": '"other"'}) == 200
    assert status(**{"If-Modified-Since": modified}) == 304
    assert status(**{"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}) == 200
    other_form = {"A2A-Version": "0.3"} if version else {"A2A-Version": "1.0"}
    assert httpx.get(url, headers={**other_form, "If-None-Match": etag}, timeout=10).status_code == 200
    not_modified = httpx.get(url, headers={**asked, "If-None-Match": etag}, timeout=10)
    assert not_modified.headers["etag"] == etag and not_modified.headers["last-modified"] == modified


def test_card_skills_say_what_the_backend_is_then_one_per_handler(echo_bridge):
    card = httpx.get(echo_bridge.root + CARD_PATHS[0], timeout=10).json()
    ids = [skill["id"] for skill in card["skills"]]
    assert ids == ["conversation", "echo"]  # the echo backend has exactly one handler
    assert "Echoes what it is told" in card["skills"][0]["description"]
    for skill in card["skills"]:
        assert skill["name"] and skill["description"] and not skill.get("examples")


def test_card_interfaces_jsonrpc_rest_and_legacy(echo_bridge):
    card = httpx.get(echo_bridge.root + CARD_PATHS[0], timeout=10).json()  # no A2A-Version: the hybrid card
    interfaces = [(i["protocolBinding"], i["protocolVersion"], i["url"]) for i in card["supportedInterfaces"]]
    assert interfaces == [("JSONRPC", "1.0", echo_bridge.url + "/"),
                          ("HTTP+JSON", "1.0", echo_bridge.url + "/rest"),
                          ("JSONRPC", "0.3", echo_bridge.url + "/"),
                          ("HTTP+JSON", "0.3", echo_bridge.url + "/rest")]
    assert card["capabilities"]["streaming"] is True
    # the 0.3 fields a 0.3 client reads
    assert card["protocolVersion"] == "0.3" and card["url"] == echo_bridge.url + "/"
    assert card["additionalInterfaces"] == [{"transport": "HTTP+JSON", "url": echo_bridge.url + "/rest"}]


def test_card_name_and_description_overrides():
    with BridgeProcess("--name", "Ada Bridge", "--description", "Answers as Ada.") as named:
        card = httpx.get(named.root + CARD_PATHS[0], timeout=10).json()
        assert card["name"] == "Ada Bridge"
        assert card["description"] == "Answers as Ada."
        assert named.name == "Ada Bridge"  # the ready line names it too
        assert health(named)["persona"] == "Ada Bridge"


def test_card_and_health_answer_while_the_backend_is_busy(echo_bridge):
    working, ended = threading.Event(), threading.Event()

    async def long_turn():
        async with sdk_client(echo_bridge.url, streaming=True) as client:
            events = []
            async for event in client.send_message(SendMessageRequest(message=user_message("sleep:5"))):
                events.append(event)
                if event.WhichOneof("payload") == "status_update":
                    if event.status_update.status.state == TaskState.TASK_STATE_WORKING:
                        working.set()
            ended.set()
            return events

    job = Background(long_turn)
    assert working.wait(WAIT), "the long turn never started working"
    wait_until(lambda: health(echo_bridge), "the persona turn to be running", until=lambda h: h["running"] >= 1)
    response = httpx.get(echo_bridge.root + CARD_PATHS[0], timeout=10)
    assert response.status_code == 200
    assert response.json()["name"] == "echo"
    # ordering, not timing: the card was answered before the 5 s turn ended
    assert not ended.is_set()
    events = job.result()
    last = events[-1]
    assert last.WhichOneof("payload") == "status_update"
    assert last.status_update.status.state == TaskState.TASK_STATE_COMPLETED


def test_health(echo_bridge):
    body = health(echo_bridge)
    assert body["ok"] is True
    assert body["store"] == "ok"
    assert body["version"] == __version__  # the installed package's; the card says it as SemVer
    assert card_version(body["version"]) == httpx.get(echo_bridge.root + CARD_PATHS[0], timeout=10).json()["version"]
    assert body["persona"] == "echo" and isinstance(body["running"], int)


SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?")


def test_the_cards_version_is_semver(echo_bridge):
    """Card validators reject a PEP 440 version ("0.1.0a1": "Invalid version format")."""
    for path in CARD_PATHS:
        version = httpx.get(echo_bridge.root + path, timeout=10).json()["version"]
        assert SEMVER.fullmatch(version), (path, version)


@pytest.mark.parametrize("pep440, semver", [("0.1.0a1", "0.1.0-a1"), ("1.2.3", "1.2.3"), ("1.2", "1.2.0"),
                                            ("2.0.0rc2.dev4", "2.0.0-rc2.dev.4"), ("1.0.0.post1", "1.0.0+post.1"),
                                            ("not a version", "not a version")])
def test_a_pep_440_version_as_semver(pep440, semver):
    assert card_version(pep440) == semver


# ---------------------------------------------------------------------------------------
# 2. SendMessage


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_message_completes_with_one_artifact(echo_bridge, binding):
    task = ask(echo_bridge.url, "hello", binding=binding)
    assert state_name(task.status.state) == "TASK_STATE_COMPLETED"
    assert len(task.artifacts) == 1
    assert proto_answer(task) == "echo: hello"


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_blocking_answer_known_at_once_is_the_whole_answer_once_and_stored_as_returned(echo_bridge, binding):
    # a persona that answers at once: the blocking caller's task is born answered, as it would end
    task = ask(echo_bridge.url, "One. Two! Three?", binding=binding)
    assert state_name(task.status.state) == "TASK_STATE_COMPLETED" and task.status.HasField("timestamp")
    assert [(a.artifact_id, a.name, [p.text for p in a.parts]) for a in task.artifacts] == [
        ("answer", "answer", ["echo: One. Two! Three?"])]
    assert [(m.role, [p.text for p in m.parts]) for m in task.history] == [(Role.ROLE_USER, ["One. Two! Three?"])]
    assert dict(task.metadata) == {"persona": "echo"}
    stored = sdk_get_task(echo_bridge.url, task.id)
    assert MessageToDict(stored) == MessageToDict(task)


def test_a_blocking_answer_known_at_once_comes_back_in_milliseconds(echo_bridge):
    # a few milliseconds here, 15 at the median with three other processes using the two cores; a
    # wait that crept into every message (a store, a lock, a timer) shows
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "role": "ROLE_USER", "parts": [{"text": "hello"}]}}}
    took = []
    with httpx.Client(timeout=30, headers={"A2A-Version": "1.0"}) as client:
        for _ in range(15):
            body["params"]["message"]["messageId"] = uuid.uuid4().hex
            started = time.perf_counter()
            reply = client.post(echo_bridge.url + "/", json=body)
            took.append(time.perf_counter() - started)
            assert reply.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply.text
    median = statistics.median(took)
    assert median < 0.1, f"a blocking echo answer took {median * 1000:.0f} ms at the median"


@pytest.mark.parametrize("binding", BINDINGS)
def test_backend_failure_is_a_failed_task_with_a_reason(echo_bridge, binding):
    task = ask(echo_bridge.url, "fail", binding=binding)
    assert state_name(task.status.state) == "TASK_STATE_FAILED"
    reason = proto_status_text(task.status)
    assert "the echo backend was told to fail" in reason
    assert not proto_answer(task)


@pytest.mark.parametrize("binding", BINDINGS)
def test_no_answer_is_failed_never_an_empty_completion(echo_bridge, binding):
    task = ask(echo_bridge.url, "empty", binding=binding)
    assert state_name(task.status.state) == "TASK_STATE_FAILED"
    assert "no answer" in proto_status_text(task.status).lower()
    assert not task.artifacts


# ---------------------------------------------------------------------------------------
# 3. streaming


def _kinds(events) -> list[str]:
    return [e.WhichOneof("payload") for e in events]


def test_stream_order_chunks_heartbeats_and_completion(echo_bridge):
    async def go():
        async with sdk_client(echo_bridge.url, streaming=True) as client:
            return await send_stream(client, user_message("slow:1.5"))

    events = asyncio.run(go())
    kinds = _kinds(events)
    assert kinds[0] == "task", kinds
    assert events[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
    task_id = events[0].task.id
    assert kinds[1] == "status_update"
    assert events[1].status_update.status.state == TaskState.TASK_STATE_WORKING

    statuses = [e.status_update for e in events if e.WhichOneof("payload") == "status_update"]
    artifacts = [e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update"]
    assert all(s.task_id == task_id for s in statuses) and all(a.task_id == task_id for a in artifacts)

    # artifact chunks: the first starts the artifact, the rest append, each sentence as it is said (1.5 s
    # apart: none waits for the next); the artifact then closes with an empty chunk, the only last chunk,
    # and the completed status repeats the whole answer
    assert len(artifacts) == 6
    assert artifacts[0].append is False
    assert all(a.append is True for a in artifacts[1:])
    closing = artifacts[-1]
    assert closing.last_chunk is True and "".join(p.text for p in closing.artifact.parts) == ""
    assert not any(a.last_chunk for a in artifacts[:-1])
    assert len({a.artifact.artifact_id for a in artifacts}) == 1
    text = "".join(p.text for a in artifacts for p in a.artifact.parts)
    assert text == "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."
    assert proto_status_text(statuses[-1].status) == text

    # heartbeats while the backend is quiet
    working = statuses[:-1]
    assert all(s.status.state == TaskState.TASK_STATE_WORKING for s in working)
    beats = [s for s in working if "heartbeat" in MessageToDict(s.metadata)]
    assert beats and all(not s.status.HasField("message") for s in beats)
    assert "Still working" in MessageToDict(beats[0].metadata)["note"]

    # terminal last
    assert kinds[-1] == "status_update"
    assert statuses[-1].status.state == TaskState.TASK_STATE_COMPLETED


def test_stream_failure_ends_with_failed_status_event(echo_bridge):
    async def go():
        async with sdk_client(echo_bridge.url, streaming=True) as client:
            return await send_stream(client, user_message("fail"))

    events = asyncio.run(go())  # must not raise
    assert _kinds(events)[0] == "task"
    last = events[-1]
    assert last.WhichOneof("payload") == "status_update"
    assert last.status_update.status.state == TaskState.TASK_STATE_FAILED
    assert "the echo backend was told to fail" in proto_status_text(last.status_update.status)


def test_client_disconnect_mid_stream_does_not_cancel_the_work(echo_bridge):
    async def first_chunk_then_leave():
        hc = httpx.AsyncClient(timeout=30)
        try:
            card = only_interface(await fetch_card(echo_bridge.url, hc), JSONRPC, "1.0")
            client = ClientFactory(ClientConfig(httpx_client=hc, streaming=True)).create(card)
            seen = []
            stream = client.send_message(SendMessageRequest(message=user_message("slow:0.5")))
            async with contextlib.aclosing(stream):
                async for event in stream:
                    seen.append(event)
                    if event.WhichOneof("payload") == "artifact_update":
                        break
            await client.close()
            return seen
        finally:
            await hc.aclose()

    seen = asyncio.run(first_chunk_then_leave())
    assert _kinds(seen)[0] == "task" and _kinds(seen)[-1] == "artifact_update"
    task_id = seen[0].task.id

    unsettled = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    task = wait_until(lambda: sdk_get_task(echo_bridge.url, task_id), "the abandoned task to settle", interval=0.25,
                      until=lambda t: t.status.state not in unsettled)
    assert state_name(task.status.state) == "TASK_STATE_COMPLETED"
    assert proto_answer(task) == "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


# ---------------------------------------------------------------------------------------
# 4. conversation


def test_follow_up_in_the_same_context_reaches_the_same_memory(echo_bridge):
    first = ask(echo_bridge.url, "remember gold")
    assert proto_answer(first) == "ok, I will remember gold."
    context = first.context_id
    follow_up = ask(echo_bridge.url, "recall", context_id=context)
    assert follow_up.context_id == context
    assert follow_up.id != first.id  # a new task in the same conversation
    assert proto_answer(follow_up) == "you told me gold."


def test_contexts_never_mix(echo_bridge):
    gold = ask(echo_bridge.url, "remember gold")
    silver = ask(echo_bridge.url, "remember silver")
    assert gold.context_id != silver.context_id
    stranger = ask(echo_bridge.url, "recall")
    assert stranger.context_id not in (gold.context_id, silver.context_id)
    assert proto_answer(stranger) == "I remember nothing."
    assert proto_answer(ask(echo_bridge.url, "recall", context_id=silver.context_id)) == "you told me silver."
    assert proto_answer(ask(echo_bridge.url, "recall", context_id=gold.context_id)) == "you told me gold."


def test_input_required_then_follow_up_continues_the_same_task(echo_bridge):
    asked = ask(echo_bridge.url, "ask:which city?")
    assert state_name(asked.status.state) == "TASK_STATE_INPUT_REQUIRED"
    assert "which city?" in proto_status_text(asked.status)
    answered = ask(echo_bridge.url, "Paris", task_id=asked.id, context_id=asked.context_id)
    assert answered.id == asked.id
    assert answered.context_id == asked.context_id
    assert state_name(answered.status.state) == "TASK_STATE_COMPLETED"
    assert proto_answer(answered).endswith("echo: Paris")
    assert state_name(sdk_get_task(echo_bridge.url, asked.id).status.state) == "TASK_STATE_COMPLETED"


# ---------------------------------------------------------------------------------------
# 5. robustness of the JSON-RPC endpoint


def _valid_send(text: str = "hello") -> dict:
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}}}


def _rest_send_body(text: str) -> dict:
    return {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}}


BAD_REQUESTS = [
    pytest.param(b"{bad json", -32700, id="malformed-json"),
    pytest.param(b"[1, 2]", -32600, id="array-of-non-objects"),
    pytest.param(b'"a string"', -32600, id="not-an-object"),
    pytest.param(json.dumps({"id": 1, "method": "GetTask", "params": {"id": "x"}}).encode(), -32600,
                 id="missing-jsonrpc"),
    pytest.param(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                             "params": {"message": 5}}).encode(), -32602, id="message-not-an-object"),
    pytest.param(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": [1]}).encode(),
                 -32602, id="params-an-array"),
    pytest.param(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}).encode(),
                 -32602, id="message-missing"),
    pytest.param(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}).encode(),
                 -32602, id="task-id-not-a-string"),
    pytest.param(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "NoSuchMethod", "params": {}}).encode(),
                 -32601, id="unknown-method"),
]


@pytest.mark.parametrize("content, code", BAD_REQUESTS)
def test_bad_jsonrpc_requests_get_the_right_error(echo_bridge, content, code):
    response = post_jsonrpc_body(echo_bridge.url, None, content=content)
    assert response.status_code < 500, response.text
    body = response.json()
    assert body.get("jsonrpc") == "2.0"
    assert body["error"]["code"] == code, body
    assert "result" not in body


OVERSIZE = 2 * 1024 * 1024  # the default limit is 1 MiB
ENDPOINTS = [pytest.param("", id="jsonrpc"), pytest.param("/rest/message:send", id="rest")]


def _oversized_body(endpoint: str) -> bytes:
    body = _rest_send_body("x" * OVERSIZE) if endpoint else _valid_send("x" * OVERSIZE)
    return json.dumps(body).encode()


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_oversized_body_is_refused_with_413(echo_bridge, endpoint):
    response = httpx.post(echo_bridge.url + endpoint, content=_oversized_body(endpoint), timeout=30,
                          headers={"Content-Type": "application/json", **V1})
    assert response.status_code == 413, (response.status_code, response.text)
    error = response.json()["error"]
    assert "1048576" in error["message"]
    assert error["code"] == (413 if endpoint else -32600)  # google.rpc.Status on REST, JSON-RPC otherwise
    assert health(echo_bridge)["ok"] is True


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_oversized_chunked_body_is_refused_with_413(echo_bridge, endpoint):
    data = _oversized_body(endpoint)

    def chunks():
        for start in range(0, len(data), 64 * 1024):
            yield data[start:start + 64 * 1024]

    response = httpx.post(echo_bridge.url + endpoint, content=chunks(), timeout=30,
                          headers={"Content-Type": "application/json", **V1})
    assert "content-length" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 413, (response.status_code, response.text)
    assert response.json()["error"]["message"].startswith("request body over")


def test_v03_message_send_without_version_header(echo_bridge):
    body = {"jsonrpc": "2.0", "id": "r1", "method": "message/send",
            "params": {"message": {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
                                   "parts": [{"kind": "text", "text": "hi from 0.3"}]}}}
    response = httpx.post(echo_bridge.url + "/", json=body, timeout=30)
    assert "a2a-version" not in {k.lower() for k in response.request.headers}
    assert response.status_code == 200, response.text
    reply = response.json()
    assert reply["id"] == "r1" and "error" not in reply, reply
    task = reply["result"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"  # 0.3 spelling, not TASK_STATE_COMPLETED
    parts = [p for a in task["artifacts"] for p in a["parts"]]
    assert all(p["kind"] == "text" for p in parts)
    assert "".join(p["text"] for p in parts) == "echo: hi from 0.3"


# ---------------------------------------------------------------------------------------
# 6. busy


async def _ask_async(url: str, text: str) -> Task:
    async with sdk_client(url) as client:
        return await send_blocking(client, user_message(text))


def test_busy_bridge_refuses_at_once_and_finishes_the_first():
    with InProcessBridge("--max-concurrent", "1") as narrow:
        first = Background(lambda: _ask_async(narrow.url, "sleep:3"))
        wait_until(lambda: health(narrow), "the first message to be running", until=lambda h: h["running"] >= 1)
        with pytest.raises(A2AClientError, match="HTTP Error 429") as refused:  # the a2a-sdk client surfaces it
            ask(narrow.url, "second")
        assert refused.value.__cause__.response.headers["retry-after"] == "1"
        assert "the bridge is busy" in refused.value.__cause__.response.json()["error"]["message"].lower()
        task = first.result()
        assert state_name(task.status.state) == "TASK_STATE_COMPLETED"
        assert proto_answer(task) == "echo: sleep:3"
        # busy is momentary: once the first is done, the next one is taken
        assert proto_answer(ask(narrow.url, "third")) == "echo: third"


# ---------------------------------------------------------------------------------------
# 7. security


def test_default_bind_is_loopback(echo_bridge):
    card = httpx.get(echo_bridge.root + CARD_PATHS[0], timeout=10).json()
    for interface in card["supportedInterfaces"]:
        assert interface["url"].startswith(f"http://127.0.0.1:{echo_bridge.port}/"), interface
    assert echo_bridge.root == f"http://127.0.0.1:{echo_bridge.port}"
    address = non_loopback_address()
    if address is not None:  # reachable only on loopback
        with pytest.raises(OSError):
            socket.create_connection((address, echo_bridge.port), timeout=5).close()


def test_public_bind_without_credentials_refuses_to_start():
    with pytest.raises(BridgeStartError) as refused:
        with BridgeProcess("--host", "0.0.0.0", env={"OVOS_A2A_PASSWORD": "", "OVOS_A2A_TOKENS": ""}):
            pass
    assert refused.value.returncode not in (None, 0)
    assert "credentials" in refused.value.stderr


def test_auth_required_on_jsonrpc_and_rest(password_and_tokens_bridge):
    url = password_and_tokens_bridge.url
    get_task_body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}
    wrong = [
        dict(),
        dict(auth=httpx.BasicAuth("a2a", "wrong")),
        dict(auth=httpx.BasicAuth("someone", PASSWORD)),
        dict(headers={"Authorization": "Bearer nope"}),
        dict(headers={"Authorization": f"Basic {TOKEN_2}"}),
        dict(headers={"Authorization": "Basic !!not-base64!!"}),
    ]
    for credentials in wrong:
        jsonrpc = post_jsonrpc_body(url, get_task_body, **credentials)
        assert jsonrpc.status_code == 401, (credentials, jsonrpc.text)
        assert jsonrpc.json()["error"]["code"] < 0
        assert "basic" in jsonrpc.headers.get("www-authenticate", "").lower()
        rest_list = httpx.get(url + "/rest/tasks", headers={**V1, **credentials.get("headers", {})},
                              auth=credentials.get("auth"), timeout=10)
        assert rest_list.status_code == 401, (credentials, rest_list.text)
        rest_send = httpx.post(url + "/rest/message:send", json=_rest_send_body("hi"),
                               headers={**V1, **credentials.get("headers", {})}, auth=credentials.get("auth"),
                               timeout=10)
        assert rest_send.status_code == 401, (credentials, rest_send.text)

    for credentials in (dict(auth=BASIC), dict(headers=BEARER_1), dict(headers=BEARER_2)):
        jsonrpc = post_jsonrpc_body(url, _valid_send("let me in"), **credentials)
        assert jsonrpc.status_code == 200, (credentials, jsonrpc.text)
        assert jsonrpc.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        rest_send = httpx.post(url + "/rest/message:send", json=_rest_send_body("rest in"),
                               headers={**V1, **credentials.get("headers", {})}, auth=credentials.get("auth"),
                               timeout=30)
        assert rest_send.status_code == 200, (credentials, rest_send.text)
        assert rest_send.json()["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

    # and through the SDK client, both bindings
    for binding in (JSONRPC, REST):
        assert proto_answer(ask(url, "sdk basic", binding=binding, auth=BASIC)) == "echo: sdk basic"
        assert proto_answer(ask(url, "sdk bearer", binding=binding, headers=BEARER_2)) == "echo: sdk bearer"


def test_cards_and_health_stay_public(password_and_tokens_bridge):
    for path in CARD_PATHS:
        response = httpx.get(password_and_tokens_bridge.root + path, timeout=10)
        assert response.status_code == 200, (path, response.text)
        card = response.json()
        assert set(card["securitySchemes"]) == {"basic", "bearer"}
    assert health(password_and_tokens_bridge)["ok"] is True


def _exercise_credentials(bridge: BridgeProcess) -> str:
    """Good and bad credentials of every kind, so that there is something to (not) log; the log."""
    for credentials in (dict(auth=BASIC), dict(headers=BEARER_1), dict(headers=BEARER_2),
                        dict(auth=httpx.BasicAuth("a2a", PASSWORD + "x")),
                        dict(headers={"Authorization": f"Bearer {TOKEN_1}x"})):
        post_jsonrpc_body(bridge.url, _valid_send("secret?"), **credentials)
    log = bridge.stderr_text()
    assert "DEBUG" in log  # --debug is on: the bridge did log, verbosely
    return log


def test_password_never_logged_in_clear(password_and_tokens_bridge):
    log = _exercise_credentials(password_and_tokens_bridge)
    assert PASSWORD not in log


def test_credentials_never_logged(password_and_tokens_bridge):
    log = _exercise_credentials(password_and_tokens_bridge)
    basic_blob = base64.b64encode(f"a2a:{PASSWORD}".encode()).decode()
    for secret in (TOKEN_1, TOKEN_2, basic_blob):
        assert secret not in log


# ---------------------------------------------------------------------------------------
# 8. ListTasks


def test_list_tasks_is_owner_scoped(password_and_tokens_bridge):
    url = password_and_tokens_bridge.url
    mine = {ask(url, f"basic {n}", auth=BASIC).id for n in range(2)}
    theirs = {ask(url, f"bearer {n}", headers=BEARER_2).id for n in range(2)}
    other = {ask(url, "bearer one", headers=BEARER_1).id}

    def ids(**credentials):
        return {t.id for t in list_tasks(url, ListTasksRequest(page_size=100), **credentials).tasks}

    seen_basic, seen_t2, seen_t1 = ids(auth=BASIC), ids(headers=BEARER_2), ids(headers=BEARER_1)
    assert mine <= seen_basic and not (theirs | other) & seen_basic
    assert theirs <= seen_t2 and not (mine | other) & seen_t2
    assert other <= seen_t1 and not (mine | theirs) & seen_t1
    # nor can one caller read another's task by id
    with pytest.raises(TaskNotFoundError):
        sdk_get_task(url, next(iter(mine)), headers=BEARER_2)
    assert sdk_get_task(url, next(iter(mine)), auth=BASIC).id in mine


def test_list_tasks_cursor_pagination(password_and_tokens_bridge):
    url = password_and_tokens_bridge.url
    first = ask(url, "page 0", auth=BASIC)
    context = first.context_id
    created = [first.id] + [ask(url, f"page {n}", auth=BASIC, context_id=context).id for n in range(1, 5)]
    assert len(set(created)) == 5

    pages, token = [], ""
    while True:
        response = list_tasks(url, ListTasksRequest(context_id=context, page_size=2, page_token=token), auth=BASIC)
        pages.append([t.id for t in response.tasks])
        token = response.next_page_token
        if not token or len(pages) > 5:
            break
    assert [len(p) for p in pages] == [2, 2, 1]
    walked = [task_id for page in pages for task_id in page]
    assert sorted(walked) == sorted(created)


def test_list_tasks_filters_by_context_and_status(password_and_tokens_bridge):
    url = password_and_tokens_bridge.url
    failed = ask(url, "fail", auth=BASIC)
    completed = ask(url, "fine", auth=BASIC, context_id=failed.context_id)
    elsewhere = ask(url, "elsewhere", auth=BASIC)
    assert state_name(failed.status.state) == "TASK_STATE_FAILED"
    assert state_name(completed.status.state) == "TASK_STATE_COMPLETED"

    in_context = list_tasks(url, ListTasksRequest(context_id=failed.context_id), auth=BASIC).tasks
    assert {t.id for t in in_context} == {failed.id, completed.id}
    assert elsewhere.id not in {t.id for t in in_context}

    only_failed = list_tasks(url, ListTasksRequest(context_id=failed.context_id,
                                                   status=TaskState.TASK_STATE_FAILED), auth=BASIC).tasks
    assert [t.id for t in only_failed] == [failed.id]

    all_completed = list_tasks(url, ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED, page_size=100),
                               auth=BASIC).tasks
    assert completed.id in {t.id for t in all_completed} and elsewhere.id in {t.id for t in all_completed}
    assert failed.id not in {t.id for t in all_completed}
    assert all(t.status.state == TaskState.TASK_STATE_COMPLETED for t in all_completed)


# ---------------------------------------------------------------------------------------
# 9. protocol versions


@pytest.mark.timeout(900)
def test_genuine_v03_sdk_client(echo_bridge):
    python = legacy_python()  # builds the a2a-sdk 0.3 venv on a cold cache
    done = subprocess.run([python, str(LEGACY_CLIENT_SCRIPT), echo_bridge.root, "hello from 0.3"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["card"]["protocolVersion"] == "0.3"
    for way in ("factory_blocking", "factory_streaming", "legacy_blocking"):
        assert result[way]["state"] == "completed", (way, result[way])
        assert result[way]["text"] == "echo: hello from 0.3", (way, result[way])
    streamed = result["factory_streaming"]["events"]
    assert streamed[0] == "task" and "artifact-update" in streamed
    assert streamed[-1] == "status-update:completed"


@pytest.mark.parametrize("binding, version", [pytest.param(JSONRPC, "1.0", id="jsonrpc-1.0"),
                                              pytest.param(REST, "1.0", id="http+json-1.0"),
                                              pytest.param(JSONRPC, "0.3", id="jsonrpc-0.3-compat"),
                                              pytest.param(REST, "0.3", id="http+json-0.3-compat")])
def test_v1_sdk_client_blocking_and_streaming_per_interface(echo_bridge, binding, version):
    async def go():
        async with sdk_client(echo_bridge.url, binding=binding, version=version) as blocking:
            task = await send_blocking(blocking, user_message(f"blocking {version}"))
        async with sdk_client(echo_bridge.url, binding=binding, version=version, streaming=True) as streaming:
            events = await send_stream(streaming, user_message(f"streaming {version}"))
        return task, events

    task, events = asyncio.run(go())
    assert state_name(task.status.state) == "TASK_STATE_COMPLETED"
    assert proto_answer(task) == f"echo: blocking {version}"
    chunks = "".join(p.text for e in events if e.WhichOneof("payload") == "artifact_update"
                     for p in e.artifact_update.artifact.parts)
    assert chunks == f"echo: streaming {version}"
    assert events[-1].WhichOneof("payload") == "status_update"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
