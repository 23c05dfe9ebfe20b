"""Proves the interop infrastructure in ``test/support/interop.py`` works end to end.

* a genuine a2a-sdk 0.3.26 server (own venv) answers the a2a-sdk 1.3 client, blocking and
  streaming, including the input-required -> continue flow;
* ovos-persona-server serving a rivescript persona answers a 1.3 client over A2A.

The first run builds the 0.3 venv (about 30 s); tests fail if it cannot be built, and are
skipped only when pip cannot reach its package index.
"""
import asyncio
import json
import os
import re
import urllib.request
import uuid
from pathlib import Path

import httpx
import pytest

from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

from support import interop
from support.interop import LegacyAgentProcess, PeerVenv, PersonaServerProcess, legacy_python, peer_python
from support.network import free_port


# building the legacy venv on a cold cache can take longer than the default test timeout
LEGACY_TIMEOUT = pytest.mark.timeout(900)

#: what the embedded brain of ovos-a2a-rivescript (smalltalk.rive) says to "what is your name",
#: sentence by sentence: only that handler can have said it
RIVESCRIPT_NAME_ANSWER = "I am OVOS, an offline OpenVoiceOS persona. I answer from a small set of rules, without any network."
RIVESCRIPT_NAME_ANSWERS = {RIVESCRIPT_NAME_ANSWER, RIVESCRIPT_NAME_ANSWER.split(". ")[0] + "."}


def _user_msg(text, task_id=None, context_id=None) -> Message:
    msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    if task_id:
        msg.task_id = task_id
    if context_id:
        msg.context_id = context_id
    return msg


async def _send(agent_url: str, message: Message, streaming: bool):
    """Send one message with a fresh 1.3 client; return the [StreamResponse] events."""
    async with httpx.AsyncClient(timeout=30) as hc:
        client = await create_client(
            agent_url, client_config=ClientConfig(httpx_client=hc, streaming=streaming))
        try:
            events = [ev async for ev in client.send_message(SendMessageRequest(message=message))]
            return events
        finally:
            await client.close()


def _artifact_text(events) -> str:
    """Text of all artifact parts, from a final Task or from artifact_update events, in order."""
    out = []
    for ev in events:
        kind = ev.WhichOneof("payload")
        if kind == "task":
            out += [p.text for a in ev.task.artifacts for p in a.parts]
        elif kind == "artifact_update":
            out += [p.text for p in ev.artifact_update.artifact.parts]
    return "".join(out)


def _states(events):
    states = []
    for ev in events:
        kind = ev.WhichOneof("payload")
        if kind == "task":
            states.append(TaskState.Name(ev.task.status.state))
        elif kind == "status_update":
            states.append(TaskState.Name(ev.status_update.status.state))
    return states


def _ids(events):
    """(task_id, context_id) carried by the events; asserts they all agree."""
    ids = set()
    for ev in events:
        kind = ev.WhichOneof("payload")
        if kind == "task":
            ids.add((ev.task.id, ev.task.context_id))
        elif kind in ("status_update", "artifact_update"):
            payload = getattr(ev, kind)
            ids.add((payload.task_id, payload.context_id))
    assert len(ids) == 1, ids
    return ids.pop()


# ---------------------------------------------------------------------------
# genuine a2a-sdk 0.3 server  <->  a2a-sdk 1.3 client
# ---------------------------------------------------------------------------

@LEGACY_TIMEOUT
def test_legacy_python_has_a2a_sdk_03():
    import subprocess
    out = subprocess.run([legacy_python(), "-c",
                          "import importlib.metadata as m; print(m.version('a2a-sdk'))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == interop.A2A_V03_VERSION


def test_legacy_python_env_override(monkeypatch):
    monkeypatch.setenv("A2A_V03_PYTHON", "/some/where/python")
    assert legacy_python() == "/some/where/python"


def _fresh_cache(monkeypatch, tmp_path) -> Path:
    """An empty cache root for this test's venvs."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "ovos-a2a-solver-tests"


def _pins_only(version: str) -> PeerVenv:
    return PeerVenv(name=f"venv-probe-{version}", requirements=(f"a2a-sdk=={version}",), imports=("a2a",),
                    python_var="OVOS_A2A_TESTS_NO_SUCH_PYTHON")


@LEGACY_TIMEOUT
def test_a_peer_venv_that_cannot_be_built_is_an_error_with_pips_output(monkeypatch, tmp_path):
    """The index answers, but has no such version: RuntimeError with pip's output, not a skip."""
    cache = _fresh_cache(monkeypatch, tmp_path)
    with pytest.raises(RuntimeError) as err:
        peer_python(_pins_only("0.0.0.dev4242"))
    assert re.search(r"-m pip .*\binstall\b", str(err.value)) and "0.0.0.dev4242" in str(err.value)
    assert not (cache / "venv-probe-0.0.0.dev4242").exists()


@LEGACY_TIMEOUT
def test_a_peer_venv_is_skipped_only_when_the_package_index_is_unreachable(monkeypatch, tmp_path):
    cache = _fresh_cache(monkeypatch, tmp_path)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no index, extra index or wheel folder from a config file
    for name in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    index = f"http://127.0.0.1:{free_port()}/simple/"  # nothing listens there
    monkeypatch.setenv("PIP_INDEX_URL", index)
    monkeypatch.setenv("PIP_RETRIES", "0")
    with pytest.raises(pytest.skip.Exception) as skipped:
        peer_python(_pins_only(interop.A2A_V03_VERSION))
    assert "package index is unreachable" in str(skipped.value) and index in str(skipped.value)
    assert not (cache / f"venv-probe-{interop.A2A_V03_VERSION}").exists()


def test_a_peer_venv_takes_only_exact_pins():
    assert _pins_only("1.2.3").pins() == {"a2a-sdk": "1.2.3"}
    with pytest.raises(ValueError, match="pins no exact version"):
        PeerVenv("venv-loose", ("a2a-sdk>=1",), ("a2a",), "OVOS_A2A_TESTS_NO_SUCH_PYTHON").pins()


@LEGACY_TIMEOUT
def test_legacy_card_is_a_genuine_03_card():
    with LegacyAgentProcess() as legacy:
        for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
            with urllib.request.urlopen(legacy.agent("echo") + path, timeout=10) as r:
                card = json.loads(r.read())
            assert card["url"] == legacy.agent("echo") + "/"
            assert card["preferredTransport"] == "JSONRPC"
            assert card["protocolVersion"] == "0.3.0"
            assert card["capabilities"]["streaming"] is True
            assert "supportedInterfaces" not in card
    assert legacy.proc is None
    legacy.stop()  # idempotent


@LEGACY_TIMEOUT
def test_legacy_echo_blocking_and_streaming_with_13_client():
    with LegacyAgentProcess() as legacy:
        echo = legacy.agent("echo")

        events = asyncio.run(_send(echo, _user_msg("hello"), streaming=False))
        assert len(events) == 1 and events[0].WhichOneof("payload") == "task"
        task = events[0].task
        assert TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
        assert _artifact_text(events) == f"echo03[{task.context_id}]: hello"

        events = asyncio.run(_send(echo, _user_msg("stream me"), streaming=True))
        kinds = [ev.WhichOneof("payload") for ev in events]
        assert kinds[0] == "task" and "artifact_update" in kinds, kinds
        assert _states(events)[-1] == "TASK_STATE_COMPLETED"
        _, context_id = _ids(events)
        assert _artifact_text(events) == f"echo03[{context_id}]: stream me"


@LEGACY_TIMEOUT
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_legacy_ask_then_continue_with_13_client(streaming):
    with LegacyAgentProcess() as legacy:
        ask = legacy.agent("ask")

        events = asyncio.run(_send(ask, _user_msg("book a table"), streaming=streaming))
        assert _states(events)[-1] == "TASK_STATE_INPUT_REQUIRED"
        task_id, context_id = _ids(events)
        last = events[-1]
        status = last.task.status if last.WhichOneof("payload") == "task" else last.status_update.status
        assert [p.text for p in status.message.parts] == ["which city?"]

        events = asyncio.run(_send(
            ask, _user_msg("Paris", task_id=task_id, context_id=context_id), streaming=streaming))
        assert _states(events)[-1] == "TASK_STATE_COMPLETED"
        assert _ids(events) == (task_id, context_id)
        assert _artifact_text(events) == f"continued03[{context_id}]: Paris"


# ---------------------------------------------------------------------------
# ovos-persona-server (this package's rivescript persona)  <->  a2a-sdk 1.3 client
# ---------------------------------------------------------------------------

@pytest.fixture
def rive_persona(tmp_path):
    path = tmp_path / "rive.json"
    path.write_text(json.dumps({"name": "rive", "handlers": ["ovos-a2a-rivescript"],
                                "ovos-a2a-rivescript": {"persist_conversations": False}}))
    return path


def test_persona_server_answers_13_client(rive_persona):
    with PersonaServerProcess(rive_persona) as srv:
        events = asyncio.run(_send(srv.a2a_url, _user_msg("what is your name"), streaming=False))
        assert len(events) == 1 and events[0].WhichOneof("payload") == "task"
        assert TaskState.Name(events[0].task.status.state) == "TASK_STATE_COMPLETED"
        assert _artifact_text(events) in RIVESCRIPT_NAME_ANSWERS

        # a client-chosen contextId is kept; streaming works
        ctx = f"ctx-{uuid.uuid4()}"
        events = asyncio.run(_send(srv.a2a_url, _user_msg("who are you", context_id=ctx), streaming=True))
        kinds = [ev.WhichOneof("payload") for ev in events]
        assert kinds[0] == "task" and "artifact_update" in kinds, kinds
        assert _states(events) == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
        assert _ids(events)[1] == ctx
        assert _artifact_text(events).strip() in RIVESCRIPT_NAME_ANSWERS
    assert srv.proc is None


def test_persona_server_wire_versions(rive_persona):
    """Raw JSON-RPC: 1.0 needs the A2A-Version header; 0.3 message/send works without one."""
    def wire_message(v03, text="who is this"):
        part = {"kind": "text", "text": text} if v03 else {"text": text}
        return {"role": "user" if v03 else "ROLE_USER", "messageId": str(uuid.uuid4()),
                "parts": [part]}

    with PersonaServerProcess(rive_persona) as srv, httpx.Client(timeout=30) as hc:
        rpc = srv.a2a_url + "/"
        ok = hc.post(rpc, headers={"A2A-Version": "1.0"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": wire_message(False, "what is your name")}}).json()
        assert ok["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert ok["result"]["task"]["artifacts"][0]["parts"][0]["text"] in RIVESCRIPT_NAME_ANSWERS

        no_header = hc.post(rpc, json={
            "jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": wire_message(False)}}).json()
        assert no_header["error"]["code"] == -32009

        legacy = hc.post(rpc, json={
            "jsonrpc": "2.0", "id": 3, "method": "message/send",
            "params": {"message": wire_message(True, "what is your name")}}).json()
        assert legacy["result"]["kind"] == "task"
        assert legacy["result"]["status"]["state"] == "completed"
        assert legacy["result"]["artifacts"][0]["parts"][0]["text"] in RIVESCRIPT_NAME_ANSWERS
