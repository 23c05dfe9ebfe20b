"""Interop with other implementations: a genuine a2a-sdk 0.3 agent (its own venv), and
ovos-persona-server republishing a persona whose handler is this plugin."""
import json

import httpx
import pytest
from a2a.utils.errors import A2AError

from ovos_a2a_solver import A2AClient, RetryPolicy

from support.chat import context_of
from support.interop import LegacyAgentProcess, PersonaServerProcess

LEGACY_TIMEOUT = pytest.mark.timeout(900)  # the first run builds the 0.3 venv


@pytest.fixture(scope="module")
def legacy():
    with LegacyAgentProcess() as process:
        yield process


@LEGACY_TIMEOUT
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_genuine_0_3_agent_keeps_the_conversation(legacy, streaming):
    with A2AClient(legacy.agent("echo"), streaming=streaming) as client:
        card = client.fetch_agent_card()
        assert card.interfaces[0].protocol_version.startswith("0.3")
        first = client.send_task("hello", session_id="s")
        second = client.send_task("again", session_id="s")
    assert first.startswith("echo03[") and first.endswith("]: hello")
    assert second == f"echo03[{context_of(first)}]: again"


@LEGACY_TIMEOUT
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_genuine_0_3_agent_input_required_is_continued(legacy, streaming):
    with A2AClient(legacy.agent("ask"), streaming=streaming) as client:
        assert client.send_task("book a trip", session_id="s") == "which city?"
        ctx = client.conversation("s").context_id
        assert client.send_task("lisbon", session_id="s") == f"continued03[{ctx}]: lisbon"


@LEGACY_TIMEOUT
@pytest.mark.parametrize("agent_name, streaming", [("ask", True), ("ask-rest", False), ("ask-rest", True)],
                         ids=["jsonrpc-streaming", "http+json-blocking", "http+json-streaming"])
def test_a_genuine_0_3_agent_that_forgot_the_task_is_let_go_of(legacy, agent_name, streaming):
    """The agent forgot its task between the question and the reply (a restart). However it
    fails the reply (its HTTP+JSON stream is cut mid-body), the session does not stay stuck on
    the task: at the latest the second failed reply lets go of it, and the next utterance
    starts a new task in the same context."""
    with A2AClient(legacy.agent(agent_name), streaming=streaming, retries=RetryPolicy(max_retries=0)) as client:
        assert client.send_task("book a trip", session_id="s") == "which city?"
        ctx = client.conversation("s").context_id
        httpx.post(legacy.url + "/_admin/forget", timeout=10).raise_for_status()
        for _ in range(2):
            if client.conversation("s").task_id is None:
                break
            with pytest.raises(A2AError):
                client.send_task("lisbon", session_id="s")
        assert client.conversation("s").task_id is None and client.conversation("s").context_id == ctx
        assert client.send_task("book again", session_id="s") == "which city?"  # a new task, in the context
        assert client.conversation("s").context_id == ctx


@pytest.mark.timeout(180)
def test_persona_server_republishes_a_persona_backed_by_this_plugin(agent, tmp_path):
    persona = tmp_path / "relay.json"
    persona.write_text(json.dumps({
        "name": "relay", "description": "an OVOS persona that relays to another A2A agent",
        "handlers": ["ovos-a2a-solver"],
        "ovos-a2a-solver": {"agent_url": agent.agent("memory"), "timeout": 20},
    }))
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    with PersonaServerProcess(str(persona), extra_env=env) as server:
        with A2AClient(server.a2a_url, timeout=60) as client:
            assert client.fetch_agent_card().name == "relay"
            assert client.send_task("remember gold", session_id="s") == "ok, I will remember gold"
            # the persona-server's contextId is the persona session; the plugin keeps the
            # test agent's conversation for it, so memory carries over
            assert client.send_task("recall", session_id="s") == "you told me gold"
            assert client.send_task("recall", session_id="other") == "I remember nothing"
