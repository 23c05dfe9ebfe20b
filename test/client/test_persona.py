"""End to end through ovos-persona: the persona JSON files in persona_examples/, a real agent."""
import json

import pytest
from ovos_bus_client.message import Message
from ovos_bus_client.session import Session
from ovos_persona import Persona, PersonaService
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole
from ovos_utils.fakebus import FakeBus

from ovos_a2a_solver import A2AChatEngine
from ovos_a2a_solver._defaults import DEFAULT_STILL_WORKING_ANNOUNCED
from support import REPO_ROOT
from support.network import free_port
from support.no_brain import NO_BRAIN_LINES
from support.waiting import wait_until


EXAMPLES = REPO_ROOT / "persona_examples"


pytestmark = pytest.mark.usefixtures("private_state")  # every test has its own XDG state directory


def example(name, agent_url):
    config = json.loads((EXAMPLES / name).read_text())
    config["ovos-a2a-solver"]["agent_url"] = agent_url
    return config


def ask(persona, text, session):
    return persona.chat([AgentMessage(role=MessageRole.USER, content=text)], session)


def test_every_remote_example_is_valid_json_with_the_plugin_configured():
    files = sorted(EXAMPLES.glob("remote-*.json"))
    assert len(files) >= 3
    for path in files:
        config = json.loads(path.read_text())
        assert "ovos-a2a-solver" in config["handlers"] and config["ovos-a2a-solver"]["agent_url"]


def test_the_bridges_embedded_persona_is_the_offline_example():
    from ovos_a2a_solver.bridge.backends.persona_file import DEFAULT_PERSONA_FILE
    assert json.loads(DEFAULT_PERSONA_FILE.read_text()) == json.loads((EXAMPLES / "offline-rivescript.json").read_text())


def test_the_persona_speaks_the_agents_answer(agent):
    persona = Persona("remote agent", example("remote-agent.json", agent.agent("echo")))
    answer = ask(persona, "what is the speed of light?", Session("kitchen"))
    assert answer.startswith("echo[") and answer.endswith("]: what is the speed of light?")


def test_the_streaming_persona_streams_sentences(agent):
    persona = Persona("streaming", example("remote-agent-streaming.json", agent.agent("stream-chunks")))
    said = list(persona.stream([AgentMessage(role=MessageRole.USER, content="hi")], Session("kitchen")))
    assert said == ["Hello there.", "How are you today?", "Fine."]


def test_input_required_through_the_persona(agent):
    persona = Persona("remote agent", example("remote-agent.json", agent.agent("ask")))
    sess = Session("kitchen")
    assert ask(persona, "ask", sess) == "which city?"
    answer = ask(persona, "lisbon", sess)
    assert answer.startswith("continued[") and answer.endswith("]: lisbon"), answer


def test_the_fallback_handler_answers_when_the_agent_is_down():
    persona = Persona("fallback", example("remote-agent-with-fallback.json",
                                          f"http://127.0.0.1:{free_port()}/a2a"))
    answer = ask(persona, "hello?", Session("kitchen"))
    assert answer in NO_BRAIN_LINES, answer  # the failure plugin, the persona's fallback, spoke


class SpokenLog:
    def __init__(self, bus):
        self.spoken = []
        bus.on("speak", lambda msg: self.spoken.append(json.loads(msg) if isinstance(msg, str) else msg))

    def lines(self):
        out = []
        for m in self.spoken:
            data = m.data if hasattr(m, "data") else m["data"]
            meta = data.get("meta") or {}
            out.append(("dialog:" + meta["dialog"]) if meta.get("dialog") else data["utterance"])
        self.spoken.clear()
        return out


def test_the_persona_pipeline_speaks_the_error_dialog_once_then_goes_on(agent, tmp_path):
    personas = tmp_path / "personas"
    personas.mkdir()
    (personas / "remote.json").write_text(json.dumps(example("remote-agent.json", agent.agent("memory"))))
    bus = FakeBus()
    service = PersonaService(bus, config={"personas_path": str(personas), "default_persona": "remote agent",
                                          "handle_fallback": True, "ignore_plugin_personas": True})
    log = SpokenLog(bus)
    sess = Session("kitchen")

    def say(text):
        service.handle_persona_query(Message("persona:query", {"utterance": text, "persona": "remote agent"},
                                             {"session": sess.serialize()}))
        return log.lines()

    assert say("remember gold") == ["ok, I will remember gold"]
    assert say("login") == ["password?"]
    agent.finish()  # the agent finished the login task on its own
    assert say("hunter2") == ["dialog:persona_error"]
    assert say("recall") == ["you told me gold"]


@pytest.fixture
def persona_bus():
    """A FakeBus with ``SessionManager`` connected to it, as ovos-core connects it in the process
    that runs the persona service (restored afterwards: it is one per process)."""
    from ovos_bus_client.session import SessionManager

    bus, earlier = FakeBus(), SessionManager.bus
    SessionManager.connect_to_bus(bus)
    yield bus
    SessionManager.bus = earlier


def test_a_question_reopens_the_microphone_once_its_audio_ended(agent, tmp_path, persona_bus):
    personas = tmp_path / "personas"
    personas.mkdir()
    (personas / "remote.json").write_text(json.dumps(example("remote-agent.json", agent.agent("ask"))))
    service = PersonaService(persona_bus, config={"personas_path": str(personas), "default_persona": "remote agent",
                                                  "handle_fallback": True, "ignore_plugin_personas": True})
    log = SpokenLog(persona_bus)
    listened = []
    persona_bus.on("mycroft.mic.listen", lambda m: listened.append(m.context["session"]["session_id"]))
    kitchen, hall = Session("kitchen"), Session("hall")

    def say(text, sess):
        service.handle_persona_query(Message("persona:query", {"utterance": text, "persona": "remote agent"},
                                             {"session": sess.serialize()}))
        return log.lines()

    def audio_ended(sess):  # what the audio service says once the session's speech has played
        persona_bus.emit(Message("recognizer_loop:audio_output_end", {}, {"session": sess.serialize()}))

    assert say("weather", kitchen) == ["which city?"]
    assert listened == []  # not while the question is said
    audio_ended(hall)
    assert listened == []  # another device's speech
    audio_ended(kitchen)
    assert listened == ["kitchen"]
    audio_ended(kitchen)
    assert listened == ["kitchen"]  # once
    answer = say("lisbon", kitchen)
    assert answer[0].endswith("]: lisbon"), answer
    audio_ended(kitchen)
    assert listened == ["kitchen"]  # an answer that asks nothing: the wake word again
    assert say("weather", kitchen) == ["which city?"]
    persona_bus.emit(Message("recognizer_loop:record_begin", {}, {"session": kitchen.serialize()}))
    audio_ended(kitchen)
    assert listened == ["kitchen"]  # the user already speaks (a button, a barge-in)


def test_a_late_answer_is_announced_on_the_messagebus_of_the_persona_process(agent, tmp_path, persona_bus):
    """No ``messagebus`` configured: the bus ovos-core connected the process to, not a second connection."""
    spoken = []
    persona_bus.on("speak", lambda m: spoken.append(m))
    engine = A2AChatEngine({"agent_url": agent.agent("echo"), "state_file": str(tmp_path / "c.json"), "timeout": 1,
                            "streaming": True})
    answer = engine.continue_chat([AgentMessage(role=MessageRole.USER, content="sleep:2")], session_id="attic")
    assert answer.content == DEFAULT_STILL_WORKING_ANNOUNCED  # the answer is announced, not kept for later
    said = wait_until(lambda: [m for m in spoken if m.context["session"]["session_id"] == "attic"],
                      "the answer to be said on the persona's messagebus", timeout=15)
    assert said[0].data["utterance"].endswith(": sleep:2") and said[0].data["expect_response"] is False
    engine.shutdown()
