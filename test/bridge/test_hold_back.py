"""A persona that pauses between sentences is heard as it speaks: the bridge holds a sentence
back only briefly (to mark the last chunk), never until the next one comes."""
import json
import time
import uuid

import httpx
import pytest

from ovos_a2a_solver import A2AClient

from support.bridge_process import BridgeProcess
from support.bridge_rpc import HEADERS, artifact_text, message
from support.personas import relay_persona

WHOLE = "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."


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


@pytest.fixture(scope="module")
def bridge():
    with BridgeProcess() as process:
        yield process


def test_a_sentence_goes_out_soon_after_it_is_said_and_the_artifact_still_closes_whole(bridge):
    events = timed_stream(bridge.url, "slow:1")  # a sentence every second
    updates = [(at, e["artifactUpdate"]) for at, e in events if "artifactUpdate" in e]
    first_at = updates[0][0]
    assert first_at < 0.75, f"the first sentence waited for the second: {first_at:.2f} s"  # was 1 s
    assert artifact_text([u for _, u in updates]) == WHOLE
    assert [bool(u.get("lastChunk")) for _, u in updates].count(True) == 1 and updates[-1][1]["lastChunk"]
    assert all(p.get("text") for _, u in updates for p in u["artifact"]["parts"])  # no empty chunk


def test_the_plugin_hears_a_slow_persona_sentence_by_sentence_without_repeats(bridge):
    with A2AClient(bridge.url, streaming=True) as client:
        started, heard = time.monotonic(), []
        for sentence in client.stream_sentences("slow:1", session_id="s"):
            heard.append((time.monotonic() - started, sentence.strip()))
    assert [s for _, s in heard] == WHOLE.replace(". ", ".|").split("|"), heard  # each once, the close says nothing
    assert heard[0][0] < 0.9, heard  # within about the hold-back and the client's grace, not 1 s


def test_a_persona_whose_second_sentence_waits_is_heard_before_it(agent, private_state, tmp_path):
    """A real persona (relaying to an agent that says "First sentence." and then waits to be
    released): the bridge's first chunk goes out while the second sentence does not exist yet."""
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendStreamingMessage",
            "params": {"message": message("tell me")}}
    persona = relay_persona(tmp_path, agent.agent("stream-gated"))
    with BridgeProcess("--persona", str(persona), backend="persona") as relay:
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
