"""An answer longer than ``max_answer_chars`` is cut after its last sentence within them, a
line says so, and the rest is neither read nor held: a 33 MB answer once was accepted and
spoken whole.

The scripted agent's ``huge`` agent answers "N C" with N characters of short sentences
("Line 12 is here. ") in appended chunks of C characters, as fast as it can. It runs in a
process of its own here: it goes on writing what the client no longer reads.
"""
import json
import re
import tracemalloc

import pytest
from a2a.types import (Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
                       TaskStatus)
from ovos_bus_client.session import Session
from ovos_persona import Persona
from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

from support import REPO_ROOT
from support.agent_process import AgentProcess
from ovos_a2a_solver import A2AClient, AnswerLimits
from ovos_a2a_solver.answers.assembler import AnswerAssembler
from ovos_a2a_solver._defaults import DEFAULT_ANSWER_CUT, DEFAULT_MAX_ANSWER_CHARS
from ovos_a2a_solver._settings import EngineSettings

CAP = DEFAULT_MAX_ANSWER_CHARS
HUGE, CHUNK = 33_000_000, 100_000  # the limit is passed in the third chunk
#: What reading the part of a huge answer within the limit may cost at its peak: a few of its
#: events and the text kept. Holding the whole answer costs more than 33 MB.
MOST_MEMORY = 16 * 1024 * 1024
LINE = re.compile(r"Line \d+ is here\.")
EXAMPLES = REPO_ROOT / "persona_examples"


@pytest.fixture(scope="module")
def agent():
    with AgentProcess() as process:
        yield process


def peak_memory(call):
    """``call()`` and the most memory Python held meanwhile (every thread), in bytes."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_cut(sentences: list[str]) -> None:
    """Whole sentences up to the limit, then the line that says the answer was cut."""
    assert sentences[-1] == DEFAULT_ANSWER_CUT, sentences[-3:]
    kept = sentences[:-1]
    assert all(LINE.fullmatch(s) for s in kept), [s for s in kept if not LINE.fullmatch(s)][:3]
    assert CAP - 20 < sum(len(s) + 1 for s in kept) <= CAP + 1


def lines_of(text: str) -> list[str]:
    """An answer's text as its sentences and the last line."""
    body, separator, line = text.rpartition("\n")
    assert separator, text[-200:]
    return [s.strip() for s in re.findall(r"[^.]+\.", body)] + [line]


@pytest.mark.parametrize("way", ["stream_sentences", "stream_task", "send_task"])
def test_a_streamed_answer_past_the_limit_is_cut_and_the_rest_not_read(agent, way):
    with A2AClient(agent.agent("huge"), streaming=True, timeout=60) as client:
        ask = {"stream_sentences": lambda: list(client.stream_sentences(f"{HUGE} {CHUNK}", session_id="s")),
               "stream_task": lambda: lines_of("".join(client.stream_task(f"{HUGE} {CHUNK}", session_id="s"))),
               "send_task": lambda: lines_of(client.send_task(f"{HUGE} {CHUNK}", session_id="s"))}[way]
        said, peak = peak_memory(ask)
        assert_cut(said)
        assert peak < MOST_MEMORY, f"{peak / 2**20:.1f} MiB held for a {HUGE / 1e6:.0f} MB answer"
        assert agent.streams()[-1]["events"] < HUGE // CHUNK // 2  # the stream was closed long before its end
        conversation = client.conversation("s")
        assert conversation.context_id and conversation.task_id is None
        short = client.send_task("100", session_id="s")  # the conversation goes on
        assert short.startswith("Line 0 is here. Line 1 is here.") and DEFAULT_ANSWER_CUT not in short


def test_a_blocking_answer_past_the_limit_is_cut_as_well(agent):
    with A2AClient(agent.agent("huge"), timeout=60) as client:
        answer = client.send_task(f"{4 * CAP} {CHUNK}", session_id="s")
    assert_cut(lines_of(answer))


def persona(name: str, agent_url: str) -> Persona:
    config = json.loads((EXAMPLES / name).read_text())
    config["ovos-a2a-solver"]["agent_url"] = agent_url
    return Persona(name, config)


def test_the_persona_speaks_a_huge_streamed_answer_up_to_the_limit_then_says_it_was_cut(agent):
    speaker = persona("remote-agent-streaming.json", agent.agent("huge"))
    said, peak = peak_memory(lambda: list(speaker.stream(
        [AgentMessage(role=MessageRole.USER, content=f"{HUGE} {CHUNK}")], Session("kitchen"))))
    assert_cut(said)
    assert peak < MOST_MEMORY, f"{peak / 2**20:.1f} MiB held for a {HUGE / 1e6:.0f} MB answer"


def test_the_persona_chats_a_huge_blocking_answer_cut_at_the_limit(agent):
    chatty = persona("remote-agent.json", agent.agent("huge"))
    answer = chatty.chat([AgentMessage(role=MessageRole.USER, content=f"{4 * CAP} {CHUNK}")], Session("kitchen"))
    assert_cut(lines_of(answer))


# ---- the assembler, event by event (real a2a-sdk events, no server) ----------------------

def appended(text: str, first: bool = False) -> StreamResponse:
    return StreamResponse(artifact_update=TaskArtifactUpdateEvent(
        task_id="t", context_id="c", append=not first, artifact=Artifact(artifact_id="a", parts=[Part(text=text)])))


def test_an_appended_chunk_past_the_limit_cuts_the_piece_after_its_last_whole_sentence():
    answer = AnswerAssembler(max_chars=40, cut_line="Too long.")
    assert [r.text for r in answer.feed(appended("One two. Three four", first=True))] == ["One two. Three four"]
    revisions = answer.feed(appended(" five six seven. Eight nine ten eleven twelve."))
    assert [(r.key, r.text, r.append, r.last) for r in revisions] == [
        ("a", "One two. Three four five six seven.", False, True), ("cut:", "Too long.", False, True)]
    assert answer.cut and answer.feed(appended("More.")) == [] and answer.finish() == []
    assert answer.final_text() == "One two. Three four five six seven.\nToo long."


def test_a_task_or_message_past_the_limit_is_cut_after_its_last_whole_sentence():
    task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED),
                artifacts=[Artifact(artifact_id="a", parts=[Part(text="First one. Second one. Third one.")]),
                           Artifact(artifact_id="b", parts=[Part(text="Another artifact.")])])
    answer = AnswerAssembler(max_chars=25, cut_line="Too long.")
    assert [r.key for r in answer.feed(StreamResponse(task=task))] == ["a", "cut:"]
    assert answer.final_text() == "First one. Second one.\nToo long."
    message = Message(message_id="m", role=Role.ROLE_AGENT, parts=[Part(text="Nosentenceends here at all")])
    answer = AnswerAssembler(max_chars=20, cut_line="Too long.")
    answer.feed(StreamResponse(message=message))
    assert answer.final_text() == "Nosentenceends here\nToo long."  # no sentence within the limit: its last word


def test_an_answer_within_the_limit_is_not_cut():
    answer = AnswerAssembler(max_chars=20, cut_line="Too long.")
    answer.feed(appended("One two. ", first=True))
    answer.feed(appended("Three four."))
    assert not answer.cut and answer.final_text() == "One two. Three four."


@pytest.mark.parametrize("value", [0, -1, "many", None, 1.5j])
def test_a_bad_limit_is_refused_by_name(value):
    with pytest.raises(ValueError, match="max_answer_chars"):
        EngineSettings.from_config({"agent_url": "http://127.0.0.1:1/a", "max_answer_chars": value})
    with pytest.raises(ValueError, match="max_answer_chars"):
        AnswerLimits(max_answer_chars=value)


def test_the_limit_and_the_line_are_read_from_the_persona_config():
    settings = EngineSettings.from_config({"agent_url": "http://127.0.0.1:1/a", "max_answer_chars": 1000,
                                           "answer_cut": "Enough."})
    assert settings.limits == AnswerLimits(max_answer_chars=1000, answer_cut="Enough.")
    default = EngineSettings.from_config({"agent_url": "http://127.0.0.1:1/a", "answer_cut": " "})
    assert (default.limits.max_answer_chars, default.limits.answer_cut) == (CAP, DEFAULT_ANSWER_CUT)
