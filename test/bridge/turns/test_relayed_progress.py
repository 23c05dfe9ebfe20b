# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A relay persona's remote agent says what it is doing ("Searching…") before it answers: the
bridge forwards those notes to its own streaming caller as "working" status updates, the note
in their metadata and never in the answer, unless --no-relay-progress turns that off."""
from datetime import datetime

from support.bridge_rpc import artifact_text, message, stream
from support.personas import relay_bridge

#: the remote agent's first status text (test/support/a2a_agent.py STATUS_SHAPES['status-delta'])
REMOTE_NOTE = "Searching…"
REMOTE_ANSWER = "The answer is forty-two. Have a nice day."
#: the notes of the agent "status-notes", in order (its script, not importable here, is a program of its own)
NOTES_BEFORE_ANSWER = ('Searching flights…', 'Comparing fares…', 'Checking seats…', 'Holding a seat…')
#: what makes the remote agent wait this many seconds between its status messages
PACE = "0.3"


def relayed_notes(events: list[dict]) -> list[dict]:
    """The status updates among a stream's ``events`` that carry a relayed progress note."""
    updates = [event["statusUpdate"] for event in events if "statusUpdate" in event]
    return [update for update in updates if update.get("metadata", {}).get("relayed")]


def texts_said(events: list[dict]) -> str:
    """Every text a client could read as the answer: artifacts and status messages."""
    artifacts = artifact_text([event["artifactUpdate"] for event in events if "artifactUpdate" in event])
    messages = [part.get("text", "") for event in events if "statusUpdate" in event
                for part in event["statusUpdate"]["status"].get("message", {}).get("parts", [])]
    return " ".join([artifacts, *messages])


def test_the_remote_agents_progress_note_reaches_the_bridges_caller_as_a_working_note(agent, private_state, tmp_path):
    with relay_bridge(tmp_path, agent.agent("status-delta")) as bridge:
        events = stream(bridge.url, message(PACE), timeout=60)
    assert events and "error" not in events[-1], events
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events
    notes = relayed_notes(events)
    assert [note["metadata"]["note"] for note in notes] == [REMOTE_NOTE], events
    for note in notes:  # a note, not a message: no client says it
        assert note["status"]["state"] == "TASK_STATE_WORKING" and "message" not in note["status"], note
    said = texts_said(events)
    assert REMOTE_ANSWER in said and "Searching" not in said, said
    # the note came before the answer
    first_answer = next(n for n, event in enumerate(events) if "artifactUpdate" in event)
    assert events.index({"statusUpdate": notes[0]}) < first_answer, events


def test_no_relay_progress_keeps_the_remote_agents_notes_to_the_persona(agent, private_state, tmp_path):
    with relay_bridge(tmp_path, agent.agent("status-delta"), "--no-relay-progress") as bridge:
        events = stream(bridge.url, message(PACE), timeout=60)
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events
    assert relayed_notes(events) == [], events
    assert not any("Searching" in str(event) for event in events), events
    assert REMOTE_ANSWER in texts_said(events), events


def test_notes_that_come_faster_than_one_a_second_are_thinned_the_newest_kept(agent, private_state, tmp_path):
    """Notes 0.4 s apart: the first goes out at once, the next one a second after it is the
    newest held back by then, and none goes out within a second of the one before."""
    with relay_bridge(tmp_path, agent.agent("status-notes")) as bridge:
        events = stream(bridge.url, message("0.4"), timeout=60)
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events
    notes = relayed_notes(events)
    said = [note["metadata"]["note"] for note in notes]
    assert said[0] == NOTES_BEFORE_ANSWER[0] and 2 <= len(said) < len(NOTES_BEFORE_ANSWER), said
    assert said == [note for note in NOTES_BEFORE_ANSWER if note in said], said  # in order, each once
    times = [datetime.fromisoformat(note["status"]["timestamp"].replace("Z", "+00:00")) for note in notes]
    gaps = [(later - earlier).total_seconds() for earlier, later in zip(times, times[1:])]
    assert all(gap >= 0.95 for gap in gaps), (said, gaps)
    assert REMOTE_ANSWER in texts_said(events) and "…" not in texts_said(events), events
