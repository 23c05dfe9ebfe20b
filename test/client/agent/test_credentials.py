"""auth_header goes only to the agent's own origin (and origins the user trusts)."""
import re

import pytest

from ovos_a2a_solver import A2AClient
from ovos_a2a_solver.agent.credentials import origin_of


ECHO_HELLO = re.compile(r"echo\[[^\]]+\]: hello")


def auth_seen(server, header="authorization"):
    return [h["path"] for h in server.headers() if header in h["headers"]]


def test_the_agent_itself_receives_the_credential(agent):
    agent.clear_headers()
    with A2AClient(agent.agent("secure"), auth_header="Bearer s3cret") as client:
        assert ECHO_HELLO.fullmatch(client.send_task("hello"))
    seen = [(h["path"], h["headers"].get("authorization")) for h in agent.headers()]
    assert ("/secure/", "Bearer s3cret") in seen and all(auth == "Bearer s3cret" for _, auth in seen), seen


def test_an_interface_url_on_another_origin_gets_no_credential(agent_pair):
    a, b = agent_pair
    a.clear_headers(), b.clear_headers()
    with A2AClient(a.agent("foreign"), auth_header="Bearer s3cret") as client:
        assert ECHO_HELLO.fullmatch(client.send_task("hello"))  # answered by B
    assert auth_seen(a) == ["/foreign/.well-known/agent-card.json"]
    assert [h["path"] for h in b.headers()] and auth_seen(b) == []


def test_a_redirect_to_another_origin_gets_no_credential(agent_pair):
    a, b = agent_pair
    a.clear_headers(), b.clear_headers()
    with A2AClient(a.agent("redirect"), auth_header="X-API-Key: k123") as client:
        assert client.fetch_agent_card().name == "echo"
        assert ECHO_HELLO.fullmatch(client.send_task("hello"))
    assert auth_seen(a, "x-api-key") == ["/redirect/.well-known/agent-card.json"]
    assert [h["path"] for h in b.headers()] and auth_seen(b, "x-api-key") == []


def test_a_trusted_origin_does_receive_it(agent_pair):
    a, b = agent_pair
    b.clear_headers()
    with A2AClient(a.agent("foreign"), auth_header="Bearer s3cret", trusted_origins=[b.url]) as client:
        assert ECHO_HELLO.fullmatch(client.send_task("hello"))
    seen = [(h["path"], h["headers"].get("authorization")) for h in b.headers()]
    assert seen and all(auth == "Bearer s3cret" for _, auth in seen), seen


def test_the_credential_never_shows_in_reprs():
    from ovos_a2a_solver.agent.credentials import OriginCredentials
    creds = OriginCredentials("Bearer very-secret", "http://127.0.0.1:1/x")
    assert "very-secret" not in repr(creds)


@pytest.mark.parametrize("url, origin", [
    ("http://Example.com/a", ("http", "example.com", 80)),
    ("https://example.com:443/", ("https", "example.com", 443)),
    ("http://127.0.0.1:8337/a2a", ("http", "127.0.0.1", 8337)),
    ("127.0.0.1:50051", ("grpc", "127.0.0.1", 50051)),
    ("ftp://example.com", None),
])
def test_origins_normalise_default_ports(url, origin):
    assert origin_of(url) == origin


def test_a_grpc_interface_on_another_origin_gets_no_credential(agent):
    agent.clear_headers()
    with A2AClient(agent.agent("grpc-only"), auth_header="Bearer s3cret") as client:
        assert ECHO_HELLO.fullmatch(client.send_task("hello"))
    calls = agent.grpc_calls()
    assert calls and all("authorization" not in c["headers"] for c in calls)


def test_a_trusted_grpc_origin_gets_the_credential_as_metadata(agent):
    agent.clear_headers()
    with A2AClient(agent.agent("grpc-only"), auth_header="Bearer s3cret", trusted_origins=[agent.grpc],
                   streaming=True) as client:
        assert client.send_task("hello").startswith("echo[")
        assert "".join(client.stream_task("again")).startswith("echo[")
    calls = agent.grpc_calls()
    assert len(calls) == 2 and all(c["headers"].get("authorization") == "Bearer s3cret" for c in calls)
