"""The bridge in front of real OVOS personas: the embedded offline one, and one that relays
to another A2A agent through this package's plugin (input-required included)."""
import asyncio
import json

import grpc
import httpx
import pytest
from a2a.client import ClientConfig, create_client, minimal_agent_card
from a2a.types import Message, Part, Role, SendMessageRequest

from ovos_a2a_solver import A2AClient, AgentTaskError

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, BridgeStartError
from support.bridge_rpc import get_task, message, send, state, status_text, task_of
from support.network import free_port
from support.no_brain import NO_BRAIN_LINES
from support.personas import relay_bridge


FALLBACK_STARTS = ("I can not look that up", "I see. I only know a little small talk")


def test_the_embedded_persona_answers_every_example_its_card_gives(private_state):
    """The card says what this persona does: its own skills, and each example is answered by the
    persona itself, not by its fallback ("I can not look that up") or the failure plugin."""
    with InProcessBridge(backend="persona") as bridge:
        with A2AClient(bridge.url, streaming=True) as client:
            card = client.fetch_agent_card()
            assert card.name == "OVOS"
            assert [s.id for s in card.skills] == ["small-talk", "memory"]
            examples = [example for skill in card.skills for example in skill.examples]
            assert len(examples) >= 4
            answers = {example: client.send_task(example, session_id="s") for example in examples}
    for example, answer in answers.items():
        assert answer.strip() and answer.strip() not in NO_BRAIN_LINES, (example, answer)
        assert not answer.startswith(FALLBACK_STARTS), f"the card's example {example!r} got the fallback: {answer!r}"
    assert "Ada" in answers["what is my name?"], answers


def test_a_persona_without_skills_claims_no_example_it_may_not_answer(private_state, tmp_path):
    persona = tmp_path / "plain.json"
    persona.write_text(json.dumps({"name": "plain", "description": "Answers about the garden.",
                                   "handlers": ["ovos-a2a-rivescript"]}))
    with InProcessBridge("--persona", str(persona), backend="persona") as bridge:
        with A2AClient(bridge.url) as client:
            card = client.fetch_agent_card()
    assert [s.id for s in card.skills] == ["conversation", "ovos-a2a-rivescript"]
    assert "Answers about the garden." in card.skills[0].description
    assert not [e for s in card.skills for e in s.examples], card.skills


@pytest.mark.parametrize("skills, said", [
    ("cooking", "skills must be a list"),
    ([{"description": "no name"}], "skills[0] must be an object with a name"),
    ([{"name": "Recipes", "examples": "boil an egg"}], "skills[0].examples must be a list of strings"),
])
def test_a_persona_file_with_malformed_skills_is_refused_in_one_line(tmp_path, skills, said):
    persona = tmp_path / "chef.json"
    persona.write_text(json.dumps({"name": "chef", "handlers": ["ovos-a2a-rivescript"], "skills": skills}))
    with pytest.raises(BridgeStartError) as refused:
        BridgeProcess("--persona", str(persona), backend="persona").stop()
    assert refused.value.returncode == 2 and f"persona 'chef': {said}" in refused.value.stderr, refused.value.stderr


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


def test_a_failed_relay_tells_the_caller_no_internal_address_and_the_log_keeps_it(private_state, tmp_path):
    """The remote agent of a relay persona is down: the failed task's text names no URL or
    host of the bridge's side; the bridge's log names the URL."""
    agent_url = f"http://127.0.0.1:{free_port()}/a2a"  # nothing listens there
    with relay_bridge(tmp_path, agent_url, serve=BridgeProcess) as bridge:
        task = task_of(send(bridge.url, message("hello")))
        said = json.dumps(task)
        log = bridge.stdout_text() + bridge.stderr_text()
    assert state(task) == "TASK_STATE_FAILED", task
    assert status_text(task), task
    assert "127.0.0.1" not in said and "http://" not in said and "/a2a" not in said, said
    assert agent_url in log, log[-2000:]


def test_the_bridge_serves_grpc_too_when_asked():
    with InProcessBridge("--grpc-port", "0") as bridge:
        with A2AClient(bridge.url) as client:
            card = client.fetch_agent_card()
        grpc_interface = [i for i in card.interfaces if i.binding == "GRPC"]
        assert len(grpc_interface) == 1 and grpc_interface[0].url.startswith("127.0.0.1:"), card.interfaces

        task = asyncio.run(asked_over_grpc(bridge.url))
    assert "".join(p.text for a in task.artifacts for p in a.parts) == "echo: over grpc"


async def asked_over_grpc(agent):
    """The task an a2a-sdk client gets for "over grpc", sent to ``agent`` (a URL or a card) over gRPC."""
    config = ClientConfig(streaming=False, supported_protocol_bindings=["GRPC"],
                          httpx_client=httpx.AsyncClient(timeout=30),
                          grpc_channel_factory=lambda url: grpc.aio.insecure_channel(url))
    sdk = await create_client(agent, client_config=config)
    try:
        msg = Message(role=Role.ROLE_USER, message_id="m1", parts=[Part(text="over grpc")])
        events = [e async for e in sdk.send_message(SendMessageRequest(message=msg))]
    finally:
        await sdk.close()
    return events[0].task


def test_grpc_unlisted_is_served_but_left_out_of_the_card():
    """--grpc-unlisted: every interface of the card is on the card's own origin (what Google
    ADK asks); gRPC still answers at HOST:PORT, for a client told of it another way."""
    port = free_port()
    with InProcessBridge("--grpc-port", str(port), "--grpc-unlisted") as bridge:
        card = httpx.get(bridge.card_url, headers={"A2A-Version": "1.0"}, timeout=10).json()
        assert [i["url"].split("/")[2] for i in card["supportedInterfaces"]] == [bridge.root.split("/")[2]] * 4, card
        assert "GRPC" not in [i["protocolBinding"] for i in card["supportedInterfaces"]], card

        task = asyncio.run(asked_over_grpc(minimal_agent_card(f"127.0.0.1:{port}", ["GRPC"])))
    assert "".join(p.text for a in task.artifacts for p in a.parts) == "echo: over grpc"


def test_grpc_with_credentials_is_refused_at_start():
    with pytest.raises(BridgeStartError) as info:
        BridgeProcess("--grpc-port", "0", env={"OVOS_A2A_PASSWORD": "pw"})
    assert info.value.returncode not in (None, 0)
    assert "gRPC cannot be combined with a password or tokens" in info.value.stderr, info.value.stderr
