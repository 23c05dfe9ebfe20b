"""Invariant 1, generated: whatever text an agent gives as its answer is said exactly once, and
a turn without any answer says so.

Each example is an agent's legal sequence of A2A events whose answer is known: progress notes
and data-only status messages first, then the answer in appended or re-sent artifact chunks
(the whole again at the last chunk, or re-sent as a replacement), in "working" status
messages (each new chunk, or the text so far) ended with nothing, the whole as an artifact or
as the final status message, in the final status message, or in a message reply; data beside
the words; perhaps a question at the end (input-required, with the schema of its reply as
data); perhaps no words at all. The task is built by the a2a-sdk's own TaskManager (what a
server stores, history included), and the client reads it as it would: the stream; a blocking
reply (the final task); a stream cut and followed by resubscribing (the task as it stands, then
the rest) or by GetTask (the final task). The real reader (``answers.assembler``, then the
sentence speaker and the shown text) must say each word of the answer once, in order; a turn
without a word must end in the outcome whose client raises NoAnswerError.

The fixed shapes, end to end through the scripted agent, are in test_answer_places.py.
"""
import asyncio

from hypothesis import HealthCheck, given, settings, strategies as st
from a2a.helpers import new_task_from_user_message
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskManager
from a2a.types import (Artifact, Message, Part, Role, StreamResponse, TaskArtifactUpdateEvent, TaskState,
                       TaskStatus, TaskStatusUpdateEvent)
from a2a.utils.proto_utils import to_stream_response
from google.protobuf import struct_pb2

from ovos_a2a_solver.answers.assembler import AnswerAssembler, TextPieces
from ovos_a2a_solver.answers.sentences import SentenceSpeaker
from ovos_a2a_solver.conversations.effects import Outcome, outcome_of

WORDS = ("apple", "river", "stone", "cloud", "garden", "lamp", "music", "window", "forest", "candle", "bridge",
         "meadow", "silver", "harbor", "pepper", "lantern", "orchard", "violet", "copper", "thunder", "willow",
         "saddle", "marble", "comet")
NOTES = ("Searching…", "Thinking...", "Looking it up…")
QUESTION = "Which one do you mean?"
ASKED = "asked-1"

PLACES = ("artifact-chunks", "artifact-cumulative", "status-delta", "status-cumulative", "final-status", "message")
ENDINGS = ("nothing", "artifact", "artifact-chunks", "final-status")  # after an answer in status messages
REPEATS = ("none", "replace", "append-whole")  # after artifact chunks: the whole again at the last chunk


@st.composite
def answers(draw):
    """The answer's chunks (distinct words, sentences capitalised and ended; a chunk after the
    first starts with its space): [] for an agent that gives no words."""
    count = draw(st.integers(0, 9))
    if not count:
        return []
    words = draw(st.permutations(WORDS))[:count]
    ends = set(draw(st.lists(st.integers(0, count - 1), max_size=3))) | {count - 1}
    text, start = [], True
    for n, word in enumerate(words):
        text.append((word.capitalize() if start else word) + ("." if n in ends else ""))
        start = n in ends
    cuts = sorted(set(draw(st.lists(st.integers(1, count - 1), max_size=count - 1)))) if count > 1 else []
    bounds = [0, *cuts, count]
    return [("" if i == 0 else " ") + " ".join(text[a:b]) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))]


@st.composite
def scripts(draw):
    chunks = draw(answers())
    place = draw(st.sampled_from(PLACES))
    return {
        "chunks": chunks,
        "place": place,
        "notes": draw(st.lists(st.sampled_from(NOTES), max_size=2)),
        "data_notes": draw(st.integers(0, 2)),
        "data_beside": draw(st.booleans()),
        "ending": draw(st.sampled_from(ENDINGS)),
        "repeat": draw(st.sampled_from(REPEATS)),
        "question": draw(st.booleans()) and place not in ("message", "final-status"),
        "question_data": draw(st.booleans()),
    }


def data_part(fields: int = 5) -> Part:
    value = struct_pb2.Value()
    value.struct_value.update({f"field{n}": n for n in range(fields)} | {"$schema": "http://json-schema.org/draft"})
    return Part(data=value)


def parts(text: str, data_beside: bool) -> list[Part]:
    """The words, with data beside them when asked (never beside no words: that data is said)."""
    return [Part(text=text)] + ([data_part()] if data_beside and text.strip() else [])


def agent_events(script) -> tuple[list, str]:
    """The agent's events (after the Task) and the text it gives as its answer and question."""
    chunks, place, beside = script["chunks"], script["place"], script["data_beside"]
    whole = "".join(chunks)
    message_id = iter(range(1000))

    def msg(text, data=False):
        return Message(message_id=f"m{next(message_id)}", role=Role.ROLE_AGENT, task_id="t", context_id="c",
                       parts=parts(text, data))

    def status(state, text=None, data=False, final=False):
        update = TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))
        if text is not None:
            update.status.message.CopyFrom(msg(text, data))
        return update

    def artifact(text, append=False, last=False, artifact_id="answer"):
        return TaskArtifactUpdateEvent(task_id="t", context_id="c", append=append, last_chunk=last,
                                       artifact=Artifact(artifact_id=artifact_id, parts=parts(text, beside)))

    if place == "message":
        return [msg(whole, beside)], whole
    working = TaskState.TASK_STATE_WORKING
    events = [status(working)]
    events += [status(working, note) for note in script["notes"]]
    for _ in range(script["data_notes"]):
        update = status(working)
        update.status.message.CopyFrom(Message(message_id=f"m{next(message_id)}", role=Role.ROLE_AGENT,
                                               parts=[data_part(3)]))
        events.append(update)
    final_text = None
    if place in ("artifact-chunks", "artifact-cumulative"):
        so_far = ""
        for n, chunk in enumerate(chunks or [""]):
            so_far += chunk
            last = n == max(len(chunks), 1) - 1 and script["repeat"] == "none"
            if place == "artifact-chunks":
                events.append(artifact(chunk, append=n > 0, last=last))
            else:
                events.append(artifact(so_far, last=last))
        if script["repeat"] == "replace":
            events.append(artifact(whole, last=True))
        elif script["repeat"] == "append-whole" and whole:
            events.append(artifact(whole, append=place == "artifact-chunks" or len(chunks) > 0, last=True))
    elif place in ("status-delta", "status-cumulative"):
        so_far = ""
        for chunk in chunks:
            so_far += chunk
            events.append(status(working, chunk if place == "status-delta" else so_far, beside))
        ending = script["ending"] if whole else "nothing"
        if ending == "artifact":
            events.append(artifact(whole, last=True))
        elif ending == "artifact-chunks":
            events += [artifact(chunk, append=n > 0, last=n == len(chunks) - 1) for n, chunk in enumerate(chunks)]
        elif ending == "final-status" and not script["question"]:
            final_text = whole
    else:  # final-status
        final_text = whole
    if script["question"]:
        events.append(status(TaskState.TASK_STATE_INPUT_REQUIRED, QUESTION, script["question_data"]))
        return events, (whole + " " + QUESTION).strip()
    events.append(status(TaskState.TASK_STATE_COMPLETED, final_text, beside and bool(final_text)))
    return events, whole


async def stored(events) -> list:
    """The task after each event, as the a2a-sdk's TaskManager stores it (its history included)."""
    user = Message(message_id=ASKED, role=Role.ROLE_USER, parts=[Part(text="go")])
    task = new_task_from_user_message(user)
    for event in events:
        if isinstance(event, (TaskStatusUpdateEvent, TaskArtifactUpdateEvent)):
            event.task_id, event.context_id = task.id, task.context_id
    manager = TaskManager(task_store=InMemoryTaskStore(), context=ServerCallContext(), task_id=None,
                          context_id=None, initial_message=user)
    snapshots = []
    for event in [task, *events]:
        await manager.save_task_event(event)
        snapshots.append(type(task)())
        snapshots[-1].CopyFrom(await manager.get_task())  # a copy: the manager changes its task in place
    return snapshots


def deliveries(events, snapshots, cut_at: int) -> dict[str, list[StreamResponse]]:
    """What the client reads, each way it may read it."""
    if isinstance(events[0], Message):
        return {"stream": [to_stream_response(events[0])], "blocking": [to_stream_response(events[0])]}
    first = [to_stream_response(snapshots[0])]
    streamed = [to_stream_response(event) for event in events]
    cut = min(cut_at, len(events))
    return {
        "stream": first + streamed,
        "blocking": [to_stream_response(snapshots[-1])],
        "resubscribed": first + streamed[:cut] + [to_stream_response(snapshots[cut])] + streamed[cut:],
        "polled": first + streamed[:cut] + [to_stream_response(snapshots[-1])],
    }


def read(responses):
    """The real reader over ``responses``: (what send_task returns, the sentences spoken, the text
    shown, whether the turn had words, its outcome)."""
    answer, speaker, pieces = AnswerAssembler(max_chars=100_000), SentenceSpeaker(), TextPieces()
    answer.asked_id = ASKED
    spoken, shown = [], []
    for revision in [r for response in responses for r in answer.feed(response)] + answer.finish():
        spoken += speaker.add(revision)
        shown += pieces.add(revision)
    spoken += speaker.finish()
    outcome = outcome_of(answer.state, answer.message_reply, answer.has_words)
    return answer.final_text(), spoken, "".join(shown), outcome


def words(text: str) -> list[str]:
    return text.split()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=scripts(), cut_at=st.integers(1, 30))
def test_every_word_of_the_answer_is_said_once_and_a_turn_without_words_says_so(script, cut_at):
    events, expected = agent_events(script)
    snapshots = [] if script["place"] == "message" else asyncio.run(stored(events))
    for way, responses in deliveries(events, snapshots, cut_at).items():
        final, spoken, shown, outcome = read(responses)
        context = f"{way}: {script}\nexpected {expected!r}"
        if not expected:
            assert outcome is Outcome.SILENT, context  # the client raises NoAnswerError
            assert (final, spoken, shown) == ("", [], ""), context
            continue
        assert outcome in (Outcome.ANSWERED, Outcome.WAITING), context
        assert words(final) == words(expected), f"{context}\nsend_task: {final!r}"
        assert words(" ".join(spoken)) == words(expected), f"{context}\nspoken: {spoken}"
        assert words(shown) == words(expected), f"{context}\nshown: {shown!r}"
