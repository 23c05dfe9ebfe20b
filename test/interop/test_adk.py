"""Interop with google-adk, in a venv of its own (test/support/interop.py):

* a deterministic ADK agent published with ADK's own A2A helper (``to_a2a``,
  test/support/peers/adk_agent.py), asked through this plugin's client and its ChatEngine;
* ADK's ``RemoteA2aAgent`` (test/support/peers/adk_client.py) asking the bridge.

ADK's default executor sends the streamed text of its partial events as WORKING status
messages, then the whole answer as one more, and as an artifact, at the end. The client reads
the chunks as the answer growing once the second continues the first (until then the first is
progress), and the whole answer, which repeats them, says nothing new. ADK's artifact executor
streams the chunks as an artifact.
"""
import sys
import time

import pytest
from ovos_bus_client.session import Session
from ovos_persona import Persona
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from ovos_a2a_solver import A2AClient

from support.bridge_in_process import InProcessBridge
from support.interop import ADK_MIN_PYTHON, AdkAgentProcess, run_adk_client

pytestmark = [
    pytest.mark.timeout(900),  # the first run builds the ADK venv
    pytest.mark.skipif(sys.version_info < ADK_MIN_PYTHON, reason="google-adk 2.x needs Python 3.11"),
]

def chunks(text, turn=1):
    """What test/support/peers/adk_agent.py says to ``text`` on turn ``turn``, chunk by chunk."""
    return [f"You asked about {text}. This is", f" turn {turn} of our", " conversation. I answer",
            " without a model."]


def whole_answer(text, turn=1):
    return "".join(chunks(text, turn))


def sentences(text, turn=1):
    return [f"You asked about {text}.", f"This is turn {turn} of our conversation.", "I answer without a model."]


@pytest.fixture(scope="module")
def adk():
    """The agent as ``to_a2a(agent)`` publishes it."""
    with AdkAgentProcess("default") as process:
        yield process


@pytest.fixture(scope="module")
def adk_artifacts():
    """The agent published with ADK's executor that streams artifacts."""
    with AdkAgentProcess("artifacts") as process:
        yield process


@pytest.fixture(scope="module")
def agents(adk, adk_artifacts):
    return {"default": adk, "artifacts": adk_artifacts}


EXECUTORS = pytest.mark.parametrize("executor", ["default", "artifacts"])


def test_the_adk_card_offers_a2a_1_0_and_streaming(adk):
    with A2AClient(adk.url) as client:
        card = client.fetch_agent_card()
    assert card.name == "scripted" and card.streaming
    assert [(i.binding, i.protocol_version) for i in card.interfaces] == [("JSONRPC", "1.0")]


@EXECUTORS
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_an_adk_agent_answers_and_keeps_the_conversation(agents, executor, streaming):
    with A2AClient(agents[executor].url, streaming=streaming) as client:
        assert client.send_task("the weather", session_id="s") == whole_answer("the weather")
        context_id = client.conversation("s").context_id
        assert client.send_task("the tides", session_id="s") == whole_answer("the tides", turn=2)
        assert client.conversation("s").context_id == context_id
        # another session is another ADK session
        assert client.send_task("the moon", session_id="other") == whole_answer("the moon")
        assert client.conversation("other").context_id != context_id


def test_adk_artifact_chunks_are_streamed_in_order(adk_artifacts):
    """Appended chunks, then the artifact rewritten whole (lastChunk): nothing said twice."""
    with A2AClient(adk_artifacts.url) as client:
        pieces = list(client.stream_task("the weather", session_id="s"))
    assert pieces == chunks("the weather")
    assert "".join(pieces) == whole_answer("the weather")


def test_adk_default_executor_chunks_are_the_answer_growing_once_the_second_continues_the_first(adk):
    progress = []
    with A2AClient(adk.url) as client:
        pieces = list(client.stream_task("the weather", session_id="s",
                                         on_update=lambda u: u.progress and progress.append(u.progress)))
    first, second, *rest = chunks("the weather")
    assert pieces == [first + second, *rest]
    assert progress == [first]


@EXECUTORS
def test_adk_sentences_are_whole(agents, executor):
    with A2AClient(agents[executor].url) as client:
        said = list(client.stream_sentences("the weather", session_id="s"))
        assert said == sentences("the weather")
        assert list(client.stream_sentences("the tides", session_id="s")) == sentences("the tides", turn=2)


@EXECUTORS
def test_a_slow_adk_answer_is_said_as_it_is_made(agents, executor):
    """0.5 s before each chunk after the first: the first sentence is out about a second
    before the last (the agent's docstring has the pauses)."""
    arrived = []
    start = time.monotonic()
    with A2AClient(agents[executor].url) as client:
        for sentence in client.stream_sentences("the weather slowly", session_id="s"):
            arrived.append((time.monotonic() - start, sentence))
    assert [s for _, s in arrived] == sentences("the weather slowly")
    assert arrived[-1][0] - arrived[0][0] >= 0.9, arrived


@EXECUTORS
def test_the_chat_engine_answers_a_persona_turn_through_adk(agents, executor, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    persona = Persona("adk", {"name": "adk", "handlers": ["ovos-a2a-solver"],
                              "ovos-a2a-solver": {"agent_url": agents[executor].url, "streaming": True,
                                                  "timeout": 30}})
    session = Session("kitchen")
    said = persona.chat([AgentMessage(role=MessageRole.USER, content="the weather")], session)
    assert said == whole_answer("the weather")
    spoken = list(persona.stream([AgentMessage(role=MessageRole.USER, content="the tides")], session))
    assert spoken == sentences("the tides", turn=2)


# ADK's RemoteA2aAgent asking the bridge

BRIDGE_ANSWER = "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


@pytest.fixture(scope="module")
def default_bridge():
    """A bridge (echo backend) with every default."""
    with InProcessBridge() as process:
        yield process


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_adk_keeps_the_bridges_answer_whole_and_once_at_either_pace(default_bridge, streaming):
    """Sentences 0.02 s apart and 0.4 s apart (more than the 0.25 s a sentence was once held
    back): what ADK keeps of the reply (what a parent agent's model sees) and its final text are
    the whole answer, once; the partial events stream it, each sentence once."""
    turns = run_adk_client(default_bridge.card_url, "slow:0.02", "slow:0.4", "hello", streaming=streaming)
    assert [t["errors"] for t in turns] == [[], [], []]
    assert [t["kept"] for t in turns] == [[BRIDGE_ANSWER], [BRIDGE_ANSWER], ["echo: hello"]]
    assert [t["final"] for t in turns] == [BRIDGE_ANSWER, BRIDGE_ANSWER, "echo: hello"]
    if streaming:
        assert ["".join(t["partial"]) for t in turns] == [BRIDGE_ANSWER, BRIDGE_ANSWER, "echo: hello"]


def test_adk_accepts_a_bridge_that_serves_grpc_unlisted_as_the_readme_says():
    """ADK refuses a card with an interface off the card's origin, which gRPC on its own port
    is (A2A's HOST:PORT); with --grpc-unlisted the card names only the HTTP interfaces, ADK
    asks the bridge, and gRPC is still served."""
    with InProcessBridge("--grpc-port", "0") as listed:
        refused = run_adk_client(listed.card_url, "hello", streaming=False)
    assert [t["final"] for t in refused] == [""]
    assert "Agent card RPC URL must" in " ".join(refused[0]["errors"]), refused
    with InProcessBridge("--grpc-port", "0", "--grpc-unlisted") as bridge:
        turns = run_adk_client(bridge.card_url, "hello", streaming=False)
    assert [t["errors"] for t in turns] == [[]]
    assert [t["final"] for t in turns] == ["echo: hello"]
