"""The bridge in front of real OVOS personas: the embedded offline one, and one that relays
to another A2A agent through this package's plugin (input-required included)."""
import asyncio
import json

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageRequest

from ovos_a2a_solver import A2AClient, AgentTaskError

from support.bridge_process import BridgeProcess, BridgeStartError
from support.bridge_rpc import get_task, state, task_of
from support.no_brain import NO_BRAIN_LINES
from support.personas import relay_persona


def test_the_embedded_default_persona_answers_offline(private_state):
    with BridgeProcess(backend="persona") as bridge:
        with A2AClient(bridge.url, streaming=True) as client:
            card = client.fetch_agent_card()
            assert card.name == "OVOS"
            assert [s.id for s in card.skills][:2] == ["conversation", "questions"]
            assert {"ovos-a2a-rivescript", "ovos-solver-failure-plugin"} <= {s.id for s in card.skills}
            answer = client.send_task("hello", session_id="s")
    # an answer, and not the failure plugin's "no brain" line: the persona's own handler spoke
    assert answer.strip(), answer
    assert answer.strip() not in NO_BRAIN_LINES, f"the failure plugin answered, not the persona: {answer!r}"


def relay_bridge(directory, agent_url: str) -> BridgeProcess:
    """The bridge serving a persona whose only handler is this plugin, pointed at ``agent_url``."""
    return BridgeProcess("--persona", str(relay_persona(directory, agent_url)), backend="persona",
                         env={"XDG_STATE_HOME": str(directory / "bridge-xdg")})


def test_a_persona_relaying_to_another_agent_passes_questions_through(agent, private_state, tmp_path):
    with relay_bridge(tmp_path, agent.agent("ask")) as bridge:
        with A2AClient(bridge.url) as client:
            assert client.send_task("book a trip", session_id="s") == "which city?"
            waiting = client.conversation("s")
            # the bridge's task waits for the user, as the remote one does
            assert state(task_of(get_task(bridge.url, waiting.task_id))) == "TASK_STATE_INPUT_REQUIRED"
            answer = client.send_task("lisbon", session_id="s")
            assert answer.startswith("continued[") and answer.endswith("]: lisbon")
            assert client.conversation("s").task_id is None
        assert state(task_of(get_task(bridge.url, waiting.task_id))) == "TASK_STATE_COMPLETED"


def test_the_users_language_travels_from_the_plugin_through_a_relay_to_the_remote_agent(agent, private_state,
                                                                                       tmp_path):
    """plugin (pt-PT) -> bridge -> the relay persona, in that language -> this plugin again ->
    the remote agent, which answers with the metadata it was sent."""
    with relay_bridge(tmp_path, agent.agent("metadata")) as bridge:
        with A2AClient(bridge.url) as client:
            answer = client.send_task("olá", session_id="s", lang="pt-PT")
    assert json.loads(answer).get("lang") == "pt-PT", answer


def test_a_persona_whose_handlers_all_fail_gives_a_failed_task_with_the_reason(agent, private_state, tmp_path):
    with relay_bridge(tmp_path, agent.agent("fail")) as bridge:
        with A2AClient(bridge.url) as client:
            with pytest.raises(AgentTaskError) as info:
                client.send_task("hello")
    assert info.value.state == "failed" and "no answer" in info.value.reason


def test_the_bridge_serves_grpc_too_when_asked():
    with BridgeProcess("--grpc-port", "0") as bridge:
        with A2AClient(bridge.url) as client:
            card = client.fetch_agent_card()
        grpc_interface = [i for i in card.interfaces if i.binding == "GRPC"]
        assert len(grpc_interface) == 1 and grpc_interface[0].url.startswith("127.0.0.1:"), card.interfaces

        async def over_grpc():
            config = ClientConfig(streaming=False, supported_protocol_bindings=["GRPC"],
                                  httpx_client=httpx.AsyncClient(timeout=30),
                                  grpc_channel_factory=lambda url: grpc.aio.insecure_channel(url))
            sdk = await create_client(bridge.url, client_config=config)
            msg = Message(role=Role.ROLE_USER, message_id="m1", parts=[Part(text="over grpc")])
            events = [e async for e in sdk.send_message(SendMessageRequest(message=msg))]
            await sdk.close()
            return events[0].task

        task = asyncio.run(over_grpc())
    assert "".join(p.text for a in task.artifacts for p in a.parts) == "echo: over grpc"


def test_grpc_with_credentials_is_refused_at_start():
    with pytest.raises(BridgeStartError) as info:
        BridgeProcess("--grpc-port", "0", env={"OVOS_A2A_PASSWORD": "pw"})
    assert info.value.returncode not in (None, 0)
    assert "gRPC cannot be combined with a password or tokens" in info.value.stderr, info.value.stderr
