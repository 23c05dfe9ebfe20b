"""Whatever the card offers: JSON-RPC, HTTP+JSON, gRPC; A2A 1.0 and 0.3."""
import re

import pytest

from ovos_a2a_solver import A2AClient


def paths_hit(agent, name):
    return {h["path"] for h in agent.headers() if h["path"].startswith(f"/{name}/")}


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
@pytest.mark.parametrize("name", ["echo", "jsonrpc-only", "rest-only", "grpc-only", "v03", "v03-legacy", "hybrid"])
def test_each_binding_and_version_answers(agent, name, streaming):
    with A2AClient(agent.agent(name), streaming=streaming) as client:
        first = client.send_task("hello", session_id="s")
        second = client.send_task("again", session_id="s")
    assert first.startswith("echo[") and first.endswith("]: hello")
    context = first[len("echo["):first.index("]")]
    assert second == f"echo[{context}]: again"


def test_rest_only_agent_is_reached_over_rest(agent):
    agent.clear_headers()
    with A2AClient(agent.agent("rest-only")) as client:
        assert re.fullmatch(r"echo\[[^\]]+\]: hello", client.send_task("hello"))
    assert any(p.startswith("/rest-only/rest/") for p in paths_hit(agent, "rest-only"))


def test_v03_agent_is_spoken_to_in_0_3(agent):
    agent.clear_headers()
    with A2AClient(agent.agent("v03")) as client:
        assert re.fullmatch(r"echo\[[^\]]+\]: hello", client.send_task("hello"))
    posts = [h for h in agent.headers() if h["method"] == "POST" and h["path"].startswith("/v03")]
    assert posts and all(h["headers"].get("a2a-version") == "0.3" for h in posts)


def test_grpc_only_agent_streams(agent):
    # the card names only a gRPC interface; no HTTP request but the card fetch happens
    with A2AClient(agent.agent("grpc-only"), streaming=True) as client:
        answer = "".join(client.stream_task("hi", session_id="g"))
        assert answer == f"echo[{client.conversation('g').context_id}]: hi"
