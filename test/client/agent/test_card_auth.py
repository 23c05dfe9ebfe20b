"""Credentials sent in the form the agent card's security schemes name, only to the agent's origin.

The test agent (test/support/a2a_agent.py) declares each scheme on its card and answers HTTP 401
to a request that satisfies none of its requirements; it also serves the OAuth2 token
endpoint and counts what it was asked.
"""
import re
import socket

import pytest
from a2a.client import A2AClientError

from ovos_a2a_solver import A2AChatEngine, A2AClient, ConversationStore, Credentials, MissingCredentialError
from ovos_a2a_solver._settings import EngineSettings
from support.agent_process import AgentProcess
from support.clock import ManualClock

from support import REPO_ROOT


ECHO = re.compile(r"echo\[[^\]]+\]: (.*)")
BEARER = Credentials(bearer_token="s3cret")
API_KEY = Credentials(api_key="k-123")
BASIC = Credentials(username="ada", password="lovelace")
OAUTH = Credentials(oauth2_client_id="client-1", oauth2_client_secret="secret-1")
SHORT_LIVED = Credentials(oauth2_client_id="short-lived", oauth2_client_secret="secret-2")


def echoed(answer: str) -> str:
    match = ECHO.fullmatch(answer)
    assert match, answer
    return match.group(1)


def calls(agent, name: str) -> list[tuple[str, str, int | None]]:
    """(method, path, status) of every request to agent ``name`` since the log was cleared."""
    return [(h["method"], h["path"], h.get("status")) for h in agent.headers()
            if h["path"].startswith(f"/{name}/") or h["path"] == f"/{name}"]


def token_requests(agent) -> list[dict]:
    return agent.tokens()["requests"]


@pytest.mark.parametrize("name, credentials, header, value", [
    ("secure", BEARER, "authorization", "Bearer s3cret"),
    ("keyed", API_KEY, "x-agent-key", "k-123"),
    ("basic", BASIC, "authorization", "Basic YWRhOmxvdmVsYWNl"),
    ("keyed-v03", API_KEY, "x-agent-key", "k-123"),  # an A2A 0.3 card: `security` and `securitySchemes`
])
def test_each_scheme_gets_its_credential_in_its_form(agent, name, credentials, header, value):
    agent.clear_headers()
    with A2AClient(agent.agent(name), credentials=credentials) as client:
        assert echoed(client.send_task("hello", session_id="s")) == "hello"
        assert echoed("".join(client.stream_task("again", session_id="s"))) == "again"
    posts = [h for h in agent.headers() if h["method"] == "POST"]
    assert len(posts) == 2 and all(h["headers"].get(header) == value and h["status"] == 200 for h in posts), posts


def test_oauth2_client_credentials_token_is_fetched_once_and_reused(agent):
    agent.clear_headers()
    before = len(token_requests(agent))
    with A2AClient(agent.agent("oauth"), credentials=OAUTH) as client:
        for text in ("one", "two"):
            assert echoed(client.send_task(text, session_id="s")) == text
        assert echoed("".join(client.stream_task("three", session_id="s"))) == "three"
    asked = token_requests(agent)[before:]
    assert asked == [{"grant_type": "client_credentials", "scope": "chat", "client": "client-1"}]
    token = agent.tokens()["issued"][-1]
    posts = [h for h in agent.headers() if h["method"] == "POST" and h["path"].startswith("/oauth/")]
    assert len(posts) == 3 and all(h["headers"]["authorization"] == f"Bearer {token}" for h in posts), posts


def test_oauth2_over_http_json_gets_a_new_token_once_after_a_401(agent):
    before = len(token_requests(agent))
    with A2AClient(agent.agent("oauth-rest"), credentials=OAUTH) as client:
        assert echoed(client.send_task("one")) == "one"
        agent.revoke_tokens()
        agent.clear_headers()
        assert echoed(client.send_task("two")) == "two"
        assert echoed(client.send_task("three")) == "three"
    assert len(token_requests(agent)) - before == 2
    first, second = agent.tokens()["issued"][-2:]
    sent = [(status, authorization) for status, authorization in
            ((h["status"], h["headers"]["authorization"]) for h in agent.headers()
             if h["path"].startswith("/oauth-rest/"))]
    assert sent == [(401, f"Bearer {first}"), (200, f"Bearer {second}"), (200, f"Bearer {second}")]


def test_an_expired_oauth2_token_is_fetched_again(agent):
    before = len(token_requests(agent))
    clock = ManualClock()
    with A2AClient(agent.agent("oauth"), credentials=SHORT_LIVED, clock=clock) as client:
        assert echoed(client.send_task("one")) == "one"
        assert echoed(client.send_task("two")) == "two"   # the token lives 1 s: still the same
        clock.advance(1.0)
        assert echoed(client.send_task("three")) == "three"
    assert [r["client"] for r in token_requests(agent)[before:]] == ["short-lived", "short-lived"]


def test_a_refused_client_secret_is_an_error_naming_the_token_endpoint(agent):
    agent.clear_headers()
    wrong = Credentials(oauth2_client_id="client-1", oauth2_client_secret="wrong")
    with A2AClient(agent.agent("oauth"), credentials=wrong) as client:
        with pytest.raises(A2AClientError, match=r"token endpoint http://127\.0\.0\.1:\d+/token refused the client "
                                                 r"credentials \(HTTP 401: invalid_client"):
            client.send_task("hello")
    assert [m for m, _, _ in calls(agent, "oauth")] == ["GET"]  # the card; no message


def test_the_first_requirement_the_credentials_satisfy_is_used(agent):
    agent.clear_headers()
    with A2AClient(agent.agent("either"), credentials=API_KEY) as client:
        assert echoed(client.send_task("by key")) == "by key"
    with A2AClient(agent.agent("either"), credentials=Credentials(api_key="k-123", oauth2_client_id="client-1",
                                                                  oauth2_client_secret="secret-1")) as client:
        assert echoed(client.send_task("by token")) == "by token"
    posts = [h["headers"] for h in agent.headers() if h["method"] == "POST" and h["path"] == "/either/"]
    assert posts[0].get("x-agent-key") == "k-123" and "authorization" not in posts[0]
    assert posts[1]["authorization"].startswith("Bearer tok-") and "x-agent-key" not in posts[1]


def test_an_auth_header_in_the_header_a_scheme_names_satisfies_it(agent):
    with A2AClient(agent.agent("keyed"), auth_header="X-Agent-Key: k-123") as client:
        assert echoed(client.send_task("hello")) == "hello"


@pytest.mark.parametrize("name, schemes, says", [
    ("secure", ("bearer",), "'bearer' (HTTP bearer): set bearer_token"),
    ("keyed", ("key",), "'key' (API key in header X-Agent-Key): set api_key"),
    ("basic", ("basic",), "'basic' (HTTP basic): set username and password"),
    ("oauth", ("oauth",), "'oauth' (OAuth2): set oauth2_client_id and oauth2_client_secret"),
    ("either", ("oauth", "key"), "'oauth' (OAuth2): set oauth2_client_id and oauth2_client_secret (or bearer_token); "
                                 "or 'key' (API key in header X-Agent-Key): set api_key"),
])
def test_a_missing_credential_names_the_scheme_and_nothing_is_sent(agent, name, schemes, says):
    agent.clear_headers()
    messages = agent.stats()["messages"][name]
    other = BASIC if name != "basic" else API_KEY  # a credential, but not one this card asks for
    with A2AClient(agent.agent(name), credentials=other) as client:
        with pytest.raises(MissingCredentialError) as info:
            client.send_task("hello")
        with pytest.raises(MissingCredentialError):
            client.get_task("any")
    assert says in str(info.value) and info.value.schemes == schemes, str(info.value)
    assert calls(agent, name) == [("GET", f"/{name}/.well-known/agent-card.json", 200)]
    assert agent.stats()["messages"][name] == messages


def test_a_plain_http_token_url_on_another_origin_is_refused(agent):
    agent.clear_headers()
    before = len(token_requests(agent))
    with A2AClient(agent.agent("oauth-plain"), credentials=OAUTH) as client:
        with pytest.raises(MissingCredentialError, match=r"'oauth-plain' \(OAuth2\): its token URL "
                                                         r"http://127\.0\.0\.1:9/token is on another origin"):
            client.send_task("hello")
    assert calls(agent, "oauth-plain") == [("GET", "/oauth-plain/.well-known/agent-card.json", 200)]
    assert len(token_requests(agent)) == before


def test_a_card_derived_credential_is_not_sent_to_a_foreign_interface(agent_pair):
    a, b = agent_pair
    a.clear_headers(), b.clear_headers()
    with A2AClient(a.agent("foreign-keyed"), credentials=API_KEY) as client:
        assert echoed(client.send_task("hello")) == "hello"  # answered by B, which asks for nothing
    assert [(h["method"], h["path"]) for h in a.headers()] == [("GET", "/foreign-keyed/.well-known/agent-card.json")]
    assert [h["method"] for h in b.headers()] == ["POST"] and "x-agent-key" not in b.headers()[0]["headers"]
    with A2AClient(a.agent("foreign-keyed"), credentials=API_KEY, trusted_origins=[b.url]) as client:
        assert echoed(client.send_task("hello")) == "hello"
    assert b.headers()[-1]["headers"].get("x-agent-key") == "k-123"


def test_oauth2_over_grpc_only_to_a_trusted_origin_and_renewed_after_unauthenticated(agent):
    agent.clear_headers()
    before = len(token_requests(agent))
    with A2AClient(agent.agent("grpc-oauth"), credentials=OAUTH) as client:  # the gRPC origin is not the agent's
        assert echoed(client.send_task("anonymous")) == "anonymous"
    assert agent.grpc_calls() and all("authorization" not in c["headers"] for c in agent.grpc_calls())
    assert len(token_requests(agent)) == before  # no token either: nowhere to send it

    agent.clear_headers()
    with A2AClient(agent.agent("grpc-oauth"), credentials=OAUTH, trusted_origins=[agent.grpc]) as client:
        assert echoed(client.send_task("one")) == "one"
        assert echoed("".join(client.stream_task("two"))) == "two"
        first = agent.tokens()["issued"][-1]
        agent.revoke_tokens()
        assert echoed(client.send_task("three")) == "three"  # unary: refused once, then a fresh token
        agent.revoke_tokens()
        with pytest.raises(A2AClientError):
            "".join(client.stream_task("four"))  # a stream is not sent twice; its token is dropped
        assert echoed("".join(client.stream_task("five"))) == "five"
    second, third = agent.tokens()["issued"][-2:]
    sent = [c["headers"].get("authorization") for c in agent.grpc_calls()]
    assert sent == [f"Bearer {first}"] * 2 + [f"Bearer {first}", f"Bearer {second}", f"Bearer {second}",
                                              f"Bearer {third}"]
    assert len(token_requests(agent)) - before == 3


def test_two_callers_with_different_credentials_never_share_a_conversation(agent):
    store = ConversationStore()
    with A2AClient(agent.agent("either"), credentials=API_KEY, conversations=store) as keyed, \
            A2AClient(agent.agent("either"), credentials=OAUTH, conversations=store) as oauth:
        keyed.send_task("hello", session_id="kitchen")
        assert keyed.conversation("kitchen") is not None and oauth.conversation("kitchen") is None


def test_the_plugin_reads_the_credentials_from_its_settings(agent):
    engine = A2AChatEngine({"agent_url": agent.agent("basic"), "username": "ada", "password": "lovelace",
                            "persist_conversations": False})
    try:
        from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole
        answer = engine.continue_chat([AgentMessage(role=MessageRole.USER, content="hello")], session_id="s")
        assert echoed(answer.content) == "hello"
    finally:
        engine.shutdown()


@pytest.mark.parametrize("config, says", [
    ({"username": "ada"}, "ovos-a2a-solver: username and password go together: set both"),
    ({"oauth2_client_secret": "s"}, "ovos-a2a-solver: oauth2_client_id and oauth2_client_secret go together"),
    ({"api_key": 123}, "ovos-a2a-solver: 'api_key' must be a string"),
    ({"username": "a:b", "password": "p"}, "username must not contain ':'"),
])
def test_bad_credential_settings_are_named(config, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        EngineSettings.from_config({"agent_url": "http://127.0.0.1:1/a", **config})


def test_credentials_never_show_in_reprs():
    secret = Credentials(bearer_token="very-secret", username="u", password="pw-secret")
    settings = EngineSettings.from_config({"agent_url": "http://127.0.0.1:1/a", "api_key": "key-secret",
                                           "oauth2_client_id": "c", "oauth2_client_secret": "s-secret"})
    from ovos_a2a_solver.agent.schemes import CardAuth
    chosen = CardAuth(("bearer",), (("Authorization", "Bearer very-secret"),))
    for text in (repr(secret), repr(settings), repr(settings.credentials), repr(chosen)):
        assert "secret" not in text.replace("client_secret", ""), text


class ConnectionCounter:
    """A loopback TCP port that counts the connections made to it and answers none: a
    connection is queued by the kernel as soon as the client's connect() returns, so the
    queue, read without waiting, says how many were made."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]
        self.count = 0

    def connections(self) -> int:
        while True:
            try:
                connection, _ = self.sock.accept()
            except BlockingIOError:
                return self.count
            connection.close()
            self.count += 1

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def foreign_token_endpoint():
    """A token endpoint on another origin that counts connections, and an agent whose card names it."""
    counter = ConnectionCounter()
    try:
        with AgentProcess("--token-url", f"https://127.0.0.1:{counter.port}/token") as agent:
            yield counter, agent
    finally:
        counter.close()


def test_a_token_url_on_another_origin_gets_not_a_byte_of_the_client_secret(foreign_token_endpoint):
    counter, agent = foreign_token_endpoint
    origin = f"https://127.0.0.1:{counter.port}"
    with A2AClient(agent.agent("oauth-elsewhere"), credentials=OAUTH) as client:
        with pytest.raises(MissingCredentialError) as info:
            client.send_task("hello")
    assert f"its token URL {origin}/token is on another origin, {origin}: refused" in str(info.value)
    assert f"list {origin} in oauth2_token_origins" in str(info.value)
    assert counter.connections() == 0
    assert calls(agent, "oauth-elsewhere") == [("GET", "/oauth-elsewhere/.well-known/agent-card.json", 200)]
    # listed, the same origin is asked (it answers nothing: the turn fails, and it saw one connection)
    with A2AClient(agent.agent("oauth-elsewhere"), credentials=OAUTH, oauth2_token_origins=[origin],
                   timeout=1) as client:
        with pytest.raises(A2AClientError) as info:
            client.send_task("hello")
    assert not isinstance(info.value, MissingCredentialError), info.value
    assert counter.connections() == 1


def test_a_token_endpoint_on_a_listed_origin_gets_the_client_secret(agent):
    origin = agent.url.replace("127.0.0.1", "localhost")  # the agent's token endpoint, by another name
    agent.clear_headers()
    before = len(token_requests(agent))
    with A2AClient(agent.agent("oauth-localhost"), credentials=OAUTH) as client:
        with pytest.raises(MissingCredentialError, match=re.escape(f"list {origin} in oauth2_token_origins")):
            client.send_task("hello")
    assert len(token_requests(agent)) == before
    with A2AClient(agent.agent("oauth-localhost"), credentials=OAUTH, oauth2_token_origins=[origin]) as client:
        assert echoed(client.send_task("hello")) == "hello"
    engine = A2AChatEngine({"agent_url": agent.agent("oauth-localhost"), "oauth2_client_id": "client-1",
                            "oauth2_client_secret": "secret-1", "oauth2_token_origins": [origin],
                            "persist_conversations": False})
    try:
        from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole
        answer = engine.continue_chat([AgentMessage(role=MessageRole.USER, content="again")], session_id="s")
        assert echoed(answer.content) == "again"
    finally:
        engine.shutdown()
    assert [r["client"] for r in token_requests(agent)[before:]] == ["client-1", "client-1"]


@pytest.mark.parametrize("value", ["login.example", "ftp://login.example", "https://", 7])
def test_a_bad_token_origin_is_refused_by_name(value):
    with pytest.raises(ValueError, match="oauth2_token_origins"):
        EngineSettings.from_config({"agent_url": "http://127.0.0.1:1/a", "oauth2_token_origins": [value]})
    with pytest.raises(ValueError, match="oauth2_token_origins"):
        A2AClient("http://127.0.0.1:1/a", oauth2_token_origins=[value])


@pytest.mark.parametrize("name, says", [
    ("keyed-host", "'key-host' (API key in header Host): the Host header belongs to the transport: refused"),
    ("keyed-length", "'key-length' (API key in header Content-Length): the Content-Length header belongs to the "
                     "transport: refused"),
    ("keyed-spaced", "'key-spaced' (API key in header 'X Agent Key'): 'X Agent Key' is not a header name: refused"),
    ("keyed-crlf", "'key-crlf' (API key in header 'X-Agent-Key\\r\\nX-Injected'): 'X-Agent-Key\\r\\nX-Injected' "
                   "is not a header name: refused"),
    ("keyed-cookie", "'key-cookie' (API key in cookie 'session=x; key'): 'session=x; key' is not a cookie name: "
                     "refused"),
    ("keyed-twice", "': two credentials in one header (authorization)"),  # 'bearer' and 'key-authorization', in any order
])
def test_an_api_key_where_none_may_go_is_refused_by_name_and_nothing_is_sent(agent, name, says):
    agent.clear_headers()
    with A2AClient(agent.agent(name), credentials=Credentials(api_key="k-123", bearer_token="s3cret")) as client:
        with pytest.raises(MissingCredentialError) as info:
            client.send_task("hello")
    assert says in str(info.value), str(info.value)
    assert "\r" not in str(info.value) and "\n" not in str(info.value)
    assert calls(agent, name) == [("GET", f"/{name}/.well-known/agent-card.json", 200)]


def test_a_refused_api_key_scheme_leaves_the_next_requirement(agent):
    agent.clear_headers()
    with A2AClient(agent.agent("keyed-host-or-key"), credentials=API_KEY) as client:
        assert echoed(client.send_task("hello")) == "hello"
    posts = [h for h in agent.headers() if h["method"] == "POST"]
    assert len(posts) == 1 and posts[0]["headers"]["x-agent-key"] == "k-123", posts
    assert posts[0]["headers"]["host"] == agent.url.split("://")[1]
