"""Agent cards: where they are found, how often they are fetched, when they are fetched again."""
import re
import socket
import tracemalloc

import httpx

import pytest
from a2a.client import AgentCardResolutionError

from ovos_a2a_solver import A2AChatEngine, A2AClient, AgentCard, CardTrust

from support.agent_process import AgentProcess
from support.clock import ManualClock
from support.network import free_port
from support.waiting import WAIT


ECHO = re.compile(r"echo\[[^\]]+\]: (?P<text>.*)")


def card_fetches(agent, name):
    return agent.stats()["card_fetches"].get(name, 0)


def test_card_is_resolved_from_the_well_known_path(agent):
    with A2AClient(agent.agent("echo")) as client:
        card = client.fetch_agent_card()
    assert isinstance(card, AgentCard)
    assert card.name == "echo"
    assert card.url == agent.agent("echo") + "/"
    assert card.version == "1.0.0"
    assert card.streaming is True
    assert card.skills and card.skills[0].id == "echo" and "hello" in card.skills[0].examples
    assert [i.binding for i in card.interfaces] == ["JSONRPC", "HTTP+JSON"]


def test_older_agents_card_falls_back_to_agent_json(agent):
    with A2AClient(agent.agent("old")) as client:
        assert client.fetch_agent_card().name == "old"
        assert ECHO.fullmatch(client.send_task("hi"))["text"] == "hi"


def test_a_url_that_is_the_card_itself_works(agent):
    with A2AClient(agent.agent("echo") + "/.well-known/agent-card.json") as client:
        assert ECHO.fullmatch(client.send_task("hi"))["text"] == "hi"


def test_card_is_fetched_once_across_turns_and_modes(agent):
    before = card_fetches(agent, "jsonrpc-only")
    with A2AClient(agent.agent("jsonrpc-only"), streaming=True) as client:
        for n in range(5):
            client.send_task(f"turn {n}", session_id="s")
            "".join(client.stream_task(f"stream {n}", session_id="s"))
            client.fetch_agent_card()
        assert client.card_fetches == 1
    assert card_fetches(agent, "jsonrpc-only") - before == 1


def test_building_an_engine_waits_on_no_network_and_its_card_is_read_once_for_it_and_its_first_turn():
    """The card is read ahead of the first turn, on the engine's warm-up thread: building the
    engine returns while an agent has not answered yet, and the first turn reads no card again."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # takes connections, never answers
        silent_url = f"http://127.0.0.1:{silent.getsockname()[1]}/echo"
        waiting = A2AChatEngine({"agent_url": silent_url, "timeout": 10})
        assert not waiting.warmed_up.is_set()  # built, while its warm-up still waits for the card
    A2AChatEngine({"agent_url": f"http://127.0.0.1:{free_port()}/nobody"})  # nothing listens: still built
    with AgentProcess() as own:  # an agent of its own: what it counts is this engine's alone
        engine = A2AChatEngine({"agent_url": own.agent("echo")})
        assert engine.warmed_up.wait(WAIT)
        assert card_fetches(own, "echo") == 1
        engine.get_response("hello")
        assert card_fetches(own, "echo") == 1


def test_an_expired_card_is_revalidated_with_its_etag(agent):
    clock = ManualClock()
    with A2AClient(agent.agent("cached"), clock=clock) as client:
        client.send_task("one")
        clock.advance(0.9)
        client.send_task("two")  # still fresh (max-age=1)
        assert client.card_fetches == 1
        clock.advance(0.2)
        client.send_task("three")
        assert client.card_fetches == 2
    hits = [h for h in agent.headers() if h["path"].startswith("/cached/.well-known")]
    etag = httpx.get(agent.agent("cached") + "/.well-known/agent-card.json", timeout=10).headers["etag"]
    assert hits[-1]["headers"].get("if-none-match") == etag, hits  # revalidated with the card's own ETag


def test_card_is_resolved_again_after_the_agent_could_not_be_reached():
    port = free_port()
    first = AgentProcess(port=port)
    with A2AClient(first.agent("echo")) as client:
        try:
            assert ECHO.fullmatch(client.send_task("before"))["text"] == "before"
        finally:
            first.stop()
        with pytest.raises(AgentCardResolutionError):
            client.send_task("while down")
        with AgentProcess(port=port) as second:
            assert ECHO.fullmatch(client.send_task("after"))["text"] == "after"
            assert second.stats()["card_fetches"]["echo"] == 1


def test_an_agent_that_is_down_gives_a_card_resolution_error():
    with A2AClient(f"http://127.0.0.1:{free_port()}/a2a", timeout=5) as client:
        with pytest.raises(AgentCardResolutionError):
            client.send_task("anyone there?")


def test_a_missing_card_says_where_it_looked(agent):
    with A2AClient(agent.agent("no-such-agent")) as client:
        with pytest.raises(AgentCardResolutionError) as info:
            client.fetch_agent_card()
    assert "agent-card.json" in str(info.value) and info.value.status_code == 404


def test_a_card_the_signature_verifier_rejects_is_not_used(agent):
    seen = []

    def verifier(card):
        seen.append(card.name)
        raise ValueError("no valid signature")

    with A2AClient(agent.agent("echo"), card_trust=CardTrust(signature_verifier=verifier)) as client:
        with pytest.raises(AgentCardResolutionError) as info:
            client.send_task("hello")
    assert seen == ["echo"] and "signature" in str(info.value)


@pytest.mark.parametrize("name", ["upgradable", "movable"], ids=["0.3-to-1.0", "jsonrpc-to-rest"])
@pytest.mark.parametrize("streaming", [False, True], ids=["blocking", "streaming"])
def test_an_agent_upgraded_in_place_is_found_again_and_the_turn_retried_once(agent, name, streaming):
    agent.upgrade(name, 0)
    try:
        with A2AClient(agent.agent(name), streaming=streaming) as client:
            first = client.send_task("before", session_id="s")
            context = client.conversation("s").context_id
            assert first == f"echo[{context}]: before"
            fetches, messages = agent.stats()["card_fetches"][name], agent.stats()["messages"][name]
            agent.upgrade(name)
            assert client.send_task("after", session_id="s") == f"echo[{context}]: after"
            assert agent.stats()["card_fetches"][name] == fetches + 1
            assert agent.stats()["messages"][name] == messages + 1  # the refused request was never processed
            interface = client.fetch_agent_card().interfaces[0]
            assert (interface.binding, interface.protocol_version) == (
                ("JSONRPC", "1.0") if name == "upgradable" else ("HTTP+JSON", "1.0"))
            task = client.list_tasks(context_id=context).tasks
            assert len(task) == 2
    finally:
        agent.upgrade(name, 0)


def test_an_agent_moved_back_and_forth_is_followed_each_time(agent):
    agent.upgrade("movable", 0)
    try:
        with A2AClient(agent.agent("movable")) as client:
            client.send_task("before")
            agent.upgrade("movable")
            # the card is fetched again; it now offers only HTTP+JSON, and answers there
            assert client.send_task("after").endswith("after")
            agent.upgrade("movable", 0)  # moved back while the client holds the HTTP+JSON card
            fetches = agent.stats()["card_fetches"]["movable"]
            assert client.send_task("back").endswith("back")
            assert agent.stats()["card_fetches"]["movable"] == fetches + 1
    finally:
        agent.upgrade("movable", 0)


def test_a_card_larger_than_the_cap_is_refused_while_it_streams(agent):
    tracemalloc.start()
    try:
        with A2AClient(agent.agent("huge-card")) as client:
            with pytest.raises(AgentCardResolutionError, match="larger than 1024 KiB"):
                client.fetch_agent_card()
            with pytest.raises(AgentCardResolutionError, match="larger than 1024 KiB"):
                client.send_task("hello")  # never cached: refused again
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024  # reading stopped at the cap: the 50 MB never came in
