"""What the bridge promises a client of a streamed answer (docs/bridge.md, "How an answer is
streamed"): each sentence goes out as it is said, appended to one ``answer`` artifact; the
artifact closes with an empty last chunk; the ``completed`` status repeats the whole answer; no
note is ever a message. So a client that honours ``append``, one that concatenates every chunk,
and one that keeps only the last chunk and the final status (ADK: test/interop/test_adk.py) all
read the answer once, whether the persona says its sentences together or far apart."""
import json
import time
import uuid

import httpx
import pytest

from ovos_a2a_solver import A2AClient

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import HEADERS, artifact_text, message, rpc
from support.personas import relay_persona

WHOLE = "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."
PACES = pytest.mark.parametrize("pace", ["slow:0.02", "slow:0.4"], ids=["together", "apart"])


def timed_stream(url: str, text: str) -> list[tuple[float, dict]]:
    """SendStreamingMessage over JSON-RPC; each event's result with the seconds since the request."""
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendStreamingMessage",
            "params": {"message": message(text)}}
    started, events = time.monotonic(), []
    with httpx.stream("POST", url + "/", json=body, headers=HEADERS, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                events.append((time.monotonic() - started, json.loads(line[5:])["result"]))
    return events


def apart_as_said(times: list[float], pace: float = 1.0) -> bool:
    """Whether sentences said ``pace`` seconds apart came at least half a pace apart, each one: a
    sentence held until the next is said comes with it (the last one with the end), however
    slowly the turn started on a busy machine, which is why the times are not read from the start."""
    return len(times) == 5 and all(later - earlier > pace / 2 for earlier, later in zip(times, times[1:]))


def text_of(parts: list[dict]) -> str:
    return "".join(p.get("text", "") for p in parts)


@pytest.fixture(scope="module")
def heartbeat_bridge():
    """A bridge (echo backend) that sends a heartbeat each second."""
    with InProcessBridge("--heartbeat", "1") as process:
        yield process


@PACES
def test_every_kind_of_client_reads_the_answer_once(heartbeat_bridge, pace):
    events = [e for _, e in timed_stream(heartbeat_bridge.url, pace)]
    updates = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert artifact_text(updates) == WHOLE  # append honoured
    assert "".join(text_of(u["artifact"]["parts"]) for u in updates) == WHOLE  # append ignored
    assert all(u.get("append") for u in updates[1:])  # nothing rewrites the artifact
    # the last chunk adds nothing: a client that keeps it as the answer keeps nothing twice
    assert [bool(u.get("lastChunk")) for u in updates] == [False] * (len(updates) - 1) + [True]
    assert text_of(updates[-1]["artifact"]["parts"]) == ""
    # ... and the final status says the whole answer, marked as repeating the artifact
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED"
    assert text_of(final["message"]["parts"]) == WHOLE and final["message"]["metadata"] == {"repeats": "answer"}
    stored = rpc(heartbeat_bridge.url, "GetTask", {"id": events[0]["task"]["id"]})["result"]
    assert text_of(stored["artifacts"][0]["parts"]) == WHOLE


def test_no_note_is_a_message(heartbeat_bridge):
    """"Message accepted" and the heartbeats are metadata: a client that reads status texts
    or the history reads no note as the answer."""
    events = [e for _, e in timed_stream(heartbeat_bridge.url, "slow:1.5")]  # a heartbeat comes each second
    working = [e["statusUpdate"] for e in events
               if "statusUpdate" in e and e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"]
    assert working[0]["metadata"] == {"note": "Message accepted; the persona is working on it."}
    assert any("heartbeat" in s.get("metadata", {}) for s in working)
    assert not [s for s in working if "message" in s["status"]], working
    stored = rpc(heartbeat_bridge.url, "GetTask", {"id": events[0]["task"]["id"]})["result"]
    assert [m["role"] for m in stored["history"]] == ["ROLE_USER"]


def test_a_sentence_goes_out_as_soon_as_it_is_said(heartbeat_bridge):
    events = timed_stream(heartbeat_bridge.url, "slow:1")  # a sentence every second
    updates = [(at, e["artifactUpdate"]) for at, e in events if "artifactUpdate" in e]
    said = [at for at, update in updates if text_of(update["artifact"]["parts"])]  # the last chunk is empty
    assert apart_as_said(said), f"a sentence waited for the next: {said}"
    assert artifact_text([u for _, u in updates]) == WHOLE


def test_the_plugin_hears_a_slow_persona_sentence_by_sentence_without_repeats(heartbeat_bridge):
    with A2AClient(heartbeat_bridge.url, streaming=True) as client:
        started, heard = time.monotonic(), []
        for sentence in client.stream_sentences("slow:1", session_id="s"):
            heard.append((time.monotonic() - started, sentence.strip()))
    assert [s for _, s in heard] == WHOLE.replace(". ", ".|").split("|"), heard  # each once, the close says nothing
    assert apart_as_said([at for at, _ in heard]), heard


@PACES
def test_the_plugin_reads_the_answer_once(heartbeat_bridge, pace):
    with A2AClient(heartbeat_bridge.url, streaming=True) as client:
        assert client.send_task(pace, session_id="s") == WHOLE


def test_a_persona_whose_second_sentence_waits_is_heard_before_it(agent, private_state, tmp_path):
    """A real persona (relaying to an agent that says "First sentence." and then waits to be
    released): the bridge's first chunk goes out while the second sentence does not exist yet."""
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendStreamingMessage",
            "params": {"message": message("tell me")}}
    persona = relay_persona(tmp_path, agent.agent("stream-gated"))
    with InProcessBridge("--persona", str(persona), backend="persona") as relay:
        updates, started = [], time.monotonic()
        with httpx.stream("POST", relay.url + "/", json=body, headers=HEADERS, timeout=60) as response:
            for line in response.iter_lines():
                if not line.startswith("data:"):
                    continue
                result = json.loads(line[5:])["result"]
                if "artifactUpdate" in result:
                    updates.append(result["artifactUpdate"])
                    if len(updates) == 1:  # said, though the agent has not said its second sentence yet
                        assert artifact_text(updates) == "First sentence."
                        # the agent holds its second sentence for 30 s unless released: a bridge that waited
                        # for it would send nothing before then
                        assert time.monotonic() - started < 10, time.monotonic() - started
                        agent.release()
    assert artifact_text(updates) == "First sentence. Second sentence.", updates
    assert updates[-1].get("lastChunk") is True
