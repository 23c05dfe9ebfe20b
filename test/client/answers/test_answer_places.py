"""Whatever text an agent gives as its answer is said exactly once, wherever the agent put it,
and a turn without any answer says so: the shapes real agents were seen sending, each built
into the scripted test agent (test/support/a2a_agent.py) and read there by the real client.

* history-answer: the answer only in the final task's history (streamed as "working" status
  messages, completed with no artifact and no status message);
* history-question: an error text only in the history of a task left input-required;
* wordless: completed with empty parts, or input-required without a word: an error, not silence;
* schema-question: a question whose status message also holds data (the reply's schema);
* forgetful: a continuation whose stream the agent breaks before its first event, having
  forgotten the task.

The generated sequences of events are in test_said_once.py.
"""
import json
import re

import pytest
from ovos_bus_client.message import Message as BusMessage
from ovos_bus_client.session import Session
from ovos_persona import Persona, PersonaService
from ovos_utils.fakebus import FakeBus

from ovos_a2a_solver import A2AClient, NoAnswerError
from support import REPO_ROOT
from support.chat import chat_engine, user
from support.cli_run import Cli

STATUS_ANSWER = "The answer is forty-two. Have a nice day."
SCHEMA_QUESTION = "Which city do you mean?"
EXAMPLES = REPO_ROOT / "persona_examples"

pytestmark = pytest.mark.usefixtures("private_state")  # every test has its own XDG state directory


def persona_config(agent_url):
    """The remote-agent persona example, answering through ``agent_url``."""
    config = json.loads((EXAMPLES / "remote-agent.json").read_text())
    config["ovos-a2a-solver"]["agent_url"] = agent_url
    return config


def persona_service(agent_url, tmp_path):
    """A persona service on a FakeBus whose default persona answers through ``agent_url``, and
    what it says for an utterance (a dialog by its name)."""
    config = persona_config(agent_url)
    personas = tmp_path / "personas"
    personas.mkdir()
    (personas / "remote.json").write_text(json.dumps(config))
    bus = FakeBus()
    service = PersonaService(bus, config={"personas_path": str(personas), "default_persona": "remote agent",
                                          "handle_fallback": True, "ignore_plugin_personas": True})
    spoken = []
    bus.on("speak", lambda m: spoken.append(m))
    session = Session("kitchen")

    def say(text):
        spoken.clear()
        service.handle_persona_query(BusMessage("persona:query", {"utterance": text, "persona": "remote agent"},
                                                {"session": session.serialize()}))
        return [("dialog:" + m.data["meta"]["dialog"]) if (m.data.get("meta") or {}).get("dialog")
                else m.data["utterance"] for m in spoken]

    return say


# ---- an answer only in the task's history --------------------------------------------------------

def test_an_answer_only_in_the_tasks_history_is_said_once_however_it_is_asked(agent, tmp_path):
    url = agent.agent("history-answer")
    with A2AClient(url) as blocking, A2AClient(url, streaming=True) as streaming:
        assert blocking.send_task("go") == STATUS_ANSWER
        assert "".join(blocking.stream_task("go", blocking=True)) == STATUS_ANSWER
        assert streaming.send_task("go") == STATUS_ANSWER
    assert list(chat_engine(url, tmp_path, streaming=True).stream_sentences(user("go"))) == ["The answer is forty-two.",
                                                                            "Have a nice day."]
    persona = Persona("remote agent", persona_config(url))
    assert persona.chat(user("go"), Session("kitchen")) == STATUS_ANSWER
    result = Cli(tmp_path / "state").run("send", url, "go", "--no-stream")
    assert (result.returncode, result.stdout) == (0, STATUS_ANSWER + "\n"), result.report


def test_an_error_only_in_the_history_of_a_task_that_asks_back_is_said_and_the_task_continues(agent):
    with A2AClient(agent.agent("history-question")) as client:
        assert client.send_task("weather", session_id="s") == "Sorry, the weather service is down."
        context_id = client.conversation("s").context_id
        assert client.send_task("Paris", session_id="s") == f"continued[{context_id}]: Paris"
    with A2AClient(agent.agent("history-question"), streaming=True) as client:
        assert list(client.stream_sentences("weather", session_id="s")) == ["Sorry, the weather service is down."]


# ---- no words at all -------------------------------------------------------------------------------

@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_task_completed_without_a_word_is_an_error_not_silence(agent, tmp_path, streaming):
    with A2AClient(agent.agent("wordless"), streaming=streaming) as client:
        with pytest.raises(NoAnswerError) as caught:
            client.send_task("go", session_id="s")
        assert caught.value.state == "completed" and caught.value.task_id
        assert "no answer" in str(caught.value)
        conversation = client.conversation("s")
        assert conversation.context_id == caught.value.context_id and conversation.task_id is None
        with pytest.raises(NoAnswerError):
            list(client.stream_sentences("go", session_id="s"))
        with pytest.raises(NoAnswerError):
            list(client.stream_task("go", session_id="s"))
    engine = chat_engine(agent.agent("wordless"), tmp_path, streaming=streaming)
    with pytest.raises(NoAnswerError):
        engine.continue_chat(user("go"), session_id="s")


def test_a_question_without_a_word_is_an_error_and_lets_go_of_its_task(agent):
    with A2AClient(agent.agent("wordless"), streaming=True) as client:
        with pytest.raises(NoAnswerError) as caught:
            client.send_task("ask", session_id="s")
        assert caught.value.state == "input-required"
        conversation = client.conversation("s")
        assert conversation.context_id and conversation.task_id is None  # not stuck on a silent question
        assert client.send_task("hello", session_id="s") == f"heard[{conversation.context_id}]: hello"


def test_the_persona_speaks_its_error_line_for_a_turn_without_a_word_then_goes_on(agent, tmp_path):
    say = persona_service(agent.agent("wordless"), tmp_path)
    assert say("go") == ["dialog:persona_error"]
    assert say("ask") == ["dialog:persona_error"]
    (heard,) = say("hello")
    assert re.fullmatch(r"heard\[[^\]]+\]: hello", heard), heard


def test_send_says_in_one_line_that_the_agent_gave_no_answer_and_fails(agent, tmp_path):
    cli = Cli(tmp_path / "state")
    for argv in (["go", "--no-stream"], ["go"], ["go", "--json"], ["ask", "--stream"]):
        result = cli.run("send", agent.agent("wordless"), *argv)
        assert result.returncode == 1 and result.stdout.strip() == "", result.report
        line = result.stderr_lines[-1]  # after --stream's progress lines; the only one otherwise
        assert "--stream" in argv or len(result.stderr_lines) == 1, result.report
        assert line.startswith("ovos-a2a: the agent gave no answer: it left task "), result.report
        assert line.endswith(("completed without any text", "input-required without any text")), result.report


# ---- a question with data beside it ----------------------------------------------------------------

@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_a_question_with_its_schema_beside_it_is_said_without_the_data(agent, tmp_path, streaming):
    engine = chat_engine(agent.agent("schema-question"), tmp_path, streaming=streaming)
    assert list(engine.stream_sentences(user("weather"), session_id="s")) == [SCHEMA_QUESTION]
    assert engine.continue_chat(user("weather"), session_id="t").content == SCHEMA_QUESTION
    with A2AClient(agent.agent("schema-question"), streaming=streaming) as client:
        assert "".join(client.stream_task("weather", session_id="s")) == SCHEMA_QUESTION
        context_id = client.conversation("s").context_id
        assert client.send_task("Paris", session_id="s") == f"continued[{context_id}]: Paris"


# ---- a continuation whose stream is cut before its first event -------------------------------------

def test_a_continuation_of_a_forgotten_task_cut_before_its_first_event_goes_as_a_new_task_at_once(agent):
    with A2AClient(agent.agent("forgetful"), streaming=True) as client:
        assert client.send_task("login", session_id="s") == "password?"
        context_id = client.conversation("s").context_id
        agent.forget()  # the agent restarted without its tasks
        assert client.send_task("hunter2", session_id="s") == f"new task[{context_id}]: hunter2"
        assert client.conversation("s").context_id == context_id and client.conversation("s").task_id is None
        assert client.send_task("login", session_id="s") == "password?"
        agent.forget()
        said = list(client.stream_sentences("hunter2", session_id="s"))
        assert said == [f"new task[{context_id}]: hunter2"]

