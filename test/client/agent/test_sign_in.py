"""A person signs in on another device for an agent that acts for them (the device authorization
grant, RFC 8628), with a real authorization server (oidc-provider, support/authorization_server.py)
and a scripted person who approves or denies the code on its pages.

The agents (test/support/a2a_agent.py with --issuer) check each token at the server's
introspection endpoint and say whose calendar they read: "calendar of ada: my day".
"""
import contextlib
import os
import re
import stat

import pytest

from ovos_a2a_solver import (A2AClient, Credentials, MissingCredentialError, SignInError, SignInPendingError,
                             TokenStore)
from ovos_a2a_solver.agent.sign_in import spelled, spoken_address
from support.authorization_server import Person, SignInWatch
from support.clock import ManualClock
from support.waiting import wait_until

PROMPT = re.compile(r"To let me use (\S+), go to (\S+) and enter the code ((?:[A-Z0-9](?:-[A-Z0-9])* ?)+)\.")


def client_for(agent, server, name="signin", client_id="voice-device", watch=None, tokens=None, **settings):
    """A client of the sign-in agent ``name`` that may send the person's codes and tokens to ``server``."""
    return A2AClient(agent.agent(name), credentials=Credentials(oauth2_client_id=client_id),
                     oauth2_token_origins=[server.url], on_sign_in=watch, tokens=tokens,
                     **{"timeout": 15, **settings})


def posts(agent, name="signin") -> list[dict]:
    """The requests that reached the agent ``name`` (its card read aside)."""
    return [h for h in agent.headers() if h["method"] == "POST" and h["path"].startswith(f"/{name}")]


def test_spelled_codes_and_spoken_addresses():
    assert spelled("WDJB-MJHT") == "W-D-J-B M-J-H-T"
    assert spelled("wdjb mjht") == "W-D-J-B M-J-H-T"
    assert spelled("123-456") == "1-2-3 4-5-6"
    assert spoken_address("https://example.com/device/") == "example.com/device"
    assert spoken_address("https://login.example.com:8443/activate") == "login.example.com:8443/activate"


def test_a_person_who_approves_quickly_is_answered_in_the_same_turn(sign_in_agent, authorization_server,
                                                                    tmp_path):
    watch = SignInWatch(Person("ada"))
    tokens = TokenStore(tmp_path / "sign_ins.json")
    sign_in_agent.clear_headers()
    with client_for(sign_in_agent, authorization_server, watch=watch, tokens=tokens) as client:
        answer = client.send_task("my day", session_id="kitchen")
        watch.done()
        prompt = watch.events[0].prompt
        assert answer == (f"To let me use signin, go to {spoken_address(prompt.verification_uri)} and enter the "
                          f"code {spelled(prompt.user_code)}.\ncalendar of ada: my day")
        assert prompt.verification_uri_complete == f"{prompt.verification_uri}?user_code={prompt.user_code}"
        assert watch.steps == [("started", "kitchen"), ("signed in", "kitchen")]
        assert client.send_task("tomorrow", session_id="kitchen") == "calendar of ada: tomorrow"  # no second sign-in
    assert len(watch.events) == 2
    asked = [e for e in authorization_server.log() if e["form"].get("client_id") == "voice-device"
             and e["path"] == "/device/auth"]
    assert asked and asked[-1]["form"]["scope"] == "calendar"  # the scopes of the card's requirement
    # kept for the person on this device, privately: a new client (a restarted persona) needs no sign-in
    assert stat.S_IMODE(os.stat(tmp_path / "sign_ins.json").st_mode) == 0o600
    with client_for(sign_in_agent, authorization_server, tokens=TokenStore(tmp_path / "sign_ins.json")) as again:
        assert again.send_task("next week", session_id="kitchen") == "calendar of ada: next week"
    assert len(posts(sign_in_agent)) == 3  # nothing was sent before the person signed in


def test_each_person_signs_in_for_themselves(sign_in_agent, authorization_server):
    tokens = TokenStore()
    with client_for(sign_in_agent, authorization_server, watch=SignInWatch(Person("ada")), tokens=tokens) as client:
        assert client.send_task("my day", session_id="kitchen").endswith("calendar of ada: my day")
    with client_for(sign_in_agent, authorization_server, watch=SignInWatch(Person("bob")), tokens=tokens) as client:
        assert client.send_task("my day", session_id="bedroom").endswith("calendar of bob: my day")
        assert client.send_task("again", session_id="kitchen") == "calendar of ada: again"


def test_approved_after_the_turns_deadline_the_kept_message_is_answered_when_ready(sign_in_agent,
                                                                                  authorization_server):
    watch = SignInWatch()
    sign_in_agent.clear_headers()
    with client_for(sign_in_agent, authorization_server, watch=watch, timeout=1.5) as client:
        with pytest.raises(SignInPendingError) as pending:
            client.send_task("my day", session_id="hall")
        assert PROMPT.fullmatch(pending.value.said) and pending.value.prompt == watch.events[0].prompt
        assert posts(sign_in_agent) == []  # kept, not sent
        Person("cy").approve(pending.value.prompt.verification_uri, pending.value.prompt.user_code)
        assert client.answer_when_ready("hall", within=15) == "calendar of cy: my day"
        assert client.answer_when_ready("hall", within=0.5) is None  # delivered once
    assert watch.steps == [("started", "hall"), ("signed in", "hall")]


def test_the_next_utterance_hears_an_answer_that_came_after_the_turn(sign_in_agent, authorization_server):
    with client_for(sign_in_agent, authorization_server, timeout=1.5) as client:
        with pytest.raises(SignInPendingError) as pending:
            client.send_task("my day", session_id="porch")
        Person("dee").approve(pending.value.prompt.verification_uri, pending.value.prompt.user_code)
        # nothing waits for its answer: the next utterance hears it first, whether it comes while the
        # device still polls (and hears the code again) or after
        answer = client.send_task("and tomorrow", session_id="porch")
    said = answer.split("\n")
    assert said[-2:] == ["calendar of dee: my day", "calendar of dee: and tomorrow"]
    assert said[:-2] in ([], [pending.value.said.replace("To let me use", "I am still waiting for you to sign in to")
                              .replace("signin, go to", "signin: go to")])


def test_speaking_again_while_the_sign_in_is_awaited_hears_the_same_code(sign_in_agent, authorization_server):
    watch = SignInWatch()
    with client_for(sign_in_agent, authorization_server, watch=watch, timeout=1) as client:
        with pytest.raises(SignInPendingError) as first:
            client.send_task("my day", session_id="den")
        with pytest.raises(SignInPendingError) as second:
            client.send_task("my week", session_id="den")
        assert second.value.prompt == first.value.prompt
        assert second.value.said.startswith("I am still waiting for you to sign in to signin")
        Person("eve").approve(first.value.prompt.verification_uri, first.value.prompt.user_code)
        assert client.answer_when_ready("den", within=15) == "calendar of eve: my day\ncalendar of eve: my week"
    assert [step for step, _ in watch.steps] == ["started", "waiting", "signed in"]
    asked = [e for e in authorization_server.log() if e["path"] == "/device/auth"
             and e["at"] >= authorization_server.log()[0]["at"]]
    assert sum(1 for e in asked if e["form"].get("client_id") == "voice-device") >= 1


def test_a_denied_sign_in_is_said_and_nothing_is_sent(sign_in_agent, authorization_server):
    watch = SignInWatch(Person("fay"), act="deny")
    sign_in_agent.clear_headers()
    with client_for(sign_in_agent, authorization_server, watch=watch) as client:
        with pytest.raises(SignInError) as denied:
            client.send_task("my day", session_id="study")
        watch.done()
        assert denied.value.reason == SignInError.DENIED
        assert denied.value.said == "The sign-in to signin was declined, so I cannot ask it."
        assert client.tokens.keys() == []
    assert posts(sign_in_agent) == []
    assert watch.steps == [("started", "study"), ("denied", "study")]


def test_a_code_that_expires_is_said(sign_in_agent, authorization_server):
    with client_for(sign_in_agent, authorization_server, client_id="brief-code", timeout=10) as client:
        with pytest.raises(SignInError) as expired:
            client.send_task("my day", session_id="attic")
    assert expired.value.reason == SignInError.EXPIRED
    assert expired.value.said == "The sign-in code for signin expired. Ask again for a new one."


def test_slow_down_makes_every_later_poll_five_seconds_slower(sign_in_agent, authorization_server):
    with client_for(sign_in_agent, authorization_server, client_id="hasty-device", timeout=2) as client:
        with pytest.raises(SignInPendingError) as pending:
            client.send_task("my day", session_id="garage")
        prompt = pending.value.prompt
        polls = wait_until(lambda: authorization_server.polls("hasty-device"), "the second poll",
                           until=lambda polled: len(polled) >= 2)
        assert [p["answer"] for p in polls][:2] == ["authorization_pending", "slow_down"]
        Person("gus").approve(prompt.verification_uri, prompt.user_code)
        assert client.answer_when_ready("garage", within=20) == "calendar of gus: my day"
    polls = [p for p in authorization_server.polls("hasty-device")
             if p["form"]["device_code"] == polls[0]["form"]["device_code"]]
    assert [p["answer"] for p in polls] == ["authorization_pending", "slow_down", 200]
    assert 0.5 <= polls[1]["at"] - polls[0]["at"] < 2.5  # the interval the server gave: 0.5 s
    assert polls[2]["at"] - polls[1]["at"] >= 5.5  # 0.5 s + 5 s, as RFC 8628 §3.5 says


@contextlib.contextmanager
def signed_in_briefly(agent, server, account: str, session_id: str):
    """``(client, clock, watch)``: a client whose person ``account`` signed in for ``session_id``
    with access tokens of 2 s; the tokens' clock moves when the test says."""
    clock = ManualClock()
    watch = SignInWatch(Person(account))
    with client_for(agent, server, client_id="brief-token", watch=watch, tokens=TokenStore(clock=clock)) as client:
        assert client.send_task("my day", session_id=session_id).endswith(f"calendar of {account}: my day")
        watch.done()
        yield client, clock, watch


def test_an_expired_access_token_is_refreshed_before_the_person_is_asked_again(sign_in_agent, authorization_server):
    with signed_in_briefly(sign_in_agent, authorization_server, "hal", "loft") as (client, clock, watch):
        clock.advance(3)  # its access token lived 2 s
        assert client.send_task("my week", session_id="loft") == "calendar of hal: my week"
    refreshes = [e for e in authorization_server.log() if e["form"].get("grant_type") == "refresh_token"
                 and e["form"].get("client_id") == "brief-token"]
    assert refreshes and refreshes[-1]["answer"] == 200
    assert [step for step, _ in watch.steps] == ["started", "signed in"]  # asked once


def test_a_revoked_refresh_token_asks_the_person_to_sign_in_again(sign_in_agent, authorization_server):
    with signed_in_briefly(sign_in_agent, authorization_server, "ivy", "cellar") as (client, clock, watch):
        assert authorization_server.revoke("ivy") >= 1  # ivy took the device's access away
        clock.advance(3)
        answer = client.send_task("my week", session_id="cellar")
        watch.done()
    assert PROMPT.match(answer) and answer.endswith("\ncalendar of ivy: my week")
    assert [step for step, _ in watch.steps] == ["started", "signed in", "started", "signed in"]
    refused = [e for e in authorization_server.log() if e["form"].get("grant_type") == "refresh_token"
               and e["form"].get("client_id") == "brief-token" and e["answer"] == "invalid_grant"]
    assert refused


def test_access_taken_away_while_the_token_is_fresh_asks_the_person_again_in_the_same_turn(sign_in_agent,
                                                                                          authorization_server):
    """The agent refuses a token its provider revoked (HTTP 401) though it has not expired: the
    refresh is refused too, so the person is asked to sign in again, and answered in that turn."""
    watch = SignInWatch(Person("joy"))
    with client_for(sign_in_agent, authorization_server, watch=watch) as client:
        assert client.send_task("my day", session_id="annex").endswith("calendar of joy: my day")
        watch.done()
        assert authorization_server.revoke("joy") >= 1
        sign_in_agent.clear_headers()
        answer = client.send_task("my week", session_id="annex")
        watch.done()
    assert PROMPT.match(answer) and answer.endswith("\ncalendar of joy: my week")
    assert [step for step, _ in watch.steps] == ["started", "signed in", "started", "signed in"]
    assert [h["status"] for h in posts(sign_in_agent)] == [401, 200]  # the revoked token, then the new one


def test_a_token_url_on_an_origin_not_listed_is_refused_before_anything_is_sent(sign_in_agent,
                                                                                authorization_server):
    before = len(authorization_server.log())
    sign_in_agent.clear_headers()
    with A2AClient(sign_in_agent.agent("signin"), credentials=Credentials(oauth2_client_id="voice-device")) as client:
        with pytest.raises(MissingCredentialError, match=re.escape(
                f"its device authorization URL {authorization_server.url}/device/auth is on another origin")):
            client.send_task("my day", session_id="s")
    assert len(authorization_server.log()) == before
    assert posts(sign_in_agent) == []


def test_openid_connect_signs_in_at_the_provider_its_discovery_document_names(sign_in_agent, authorization_server):
    watch = SignInWatch(Person("jo"))
    with client_for(sign_in_agent, authorization_server, name="signin-oidc", watch=watch) as client:
        assert client.send_task("my day", session_id="office").endswith("calendar of jo: my day")
    with A2AClient(sign_in_agent.agent("signin-oidc"), credentials=Credentials(oauth2_client_id="voice-device")) as c:
        with pytest.raises(MissingCredentialError, match="its device authorization URL .* is on another origin"):
            c.send_task("my day", session_id="office")


def test_an_auth_required_task_is_continued_once_the_person_signed_in(sign_in_agent, authorization_server):
    watch = SignInWatch(Person("kim"))
    sign_in_agent.clear_headers()
    with client_for(sign_in_agent, authorization_server, name="signin-later", watch=watch) as client:
        answer = client.send_task("my day", session_id="yard")
        conversation = client.conversation("yard")
        assert client.send_task("tomorrow", session_id="yard") == "calendar of kim: tomorrow"
    said = answer.split("\n")
    assert said[0] == "Please sign in to read your calendar." and PROMPT.fullmatch(said[1])
    assert said[2] == "calendar of kim: my day"
    assert conversation.task_id is None  # the task was continued to its end
    sent = posts(sign_in_agent, "signin-later")
    assert "authorization" not in sent[0]["headers"] and sent[1]["headers"]["authorization"].startswith("Bearer ")


def test_signing_out_forgets_and_revokes_the_persons_tokens(sign_in_agent, authorization_server, tmp_path):
    watch = SignInWatch(Person("lee"))
    tokens = TokenStore(tmp_path / "sign_ins.json")
    with client_for(sign_in_agent, authorization_server, watch=watch, tokens=tokens) as client:
        client.send_task("my day", session_id="nook")
        watch.done()
        refresh = [t for t in authorization_server.tokens()["refresh"] if t["account"] == "lee"][-1]["value"]
        assert client.sign_out("nook") == 1
        assert tokens.keys() == []
    revoked = [e for e in authorization_server.log() if e["path"] == "/token/revocation"]
    assert any(e["form"].get("token") == refresh and e["answer"] == 200 for e in revoked)
    again = [e for e in authorization_server.log() if e["form"].get("grant_type") == "refresh_token"
             and e["form"].get("refresh_token") == refresh]
    assert again == []


def test_the_persons_codes_and_tokens_never_leave_their_origins(sign_in_agent, authorization_server):
    """After sign-ins, refreshes and sign-outs: every refresh token and device code the server
    issued went only to the server; every access token only to the agents (and, revoked, back
    to the server); the agents never saw a refresh token or a device code."""
    with signed_in_briefly(sign_in_agent, authorization_server, "max", "shed") as (client, clock, _):
        clock.advance(3)
        client.send_task("my week", session_id="shed")
        client.sign_out("shed")
    issued = authorization_server.tokens()
    refresh = {t["value"] for t in issued["refresh"] if t["account"] == "max"}
    access = {t["value"] for t in issued["access"] if t["account"] == "max"}
    codes = {e["form"]["device_code"] for e in authorization_server.polls("brief-token")}
    assert refresh and access and codes
    seen_by_agents = " ".join(f"{h['path']} {h['headers']}" for h in sign_in_agent.headers())
    assert not any(secret in seen_by_agents for secret in refresh | codes)
    sent = {h["headers"].get("authorization", "").removeprefix("Bearer ") for h in sign_in_agent.headers()}
    assert access & sent  # the agent had them
    for entry in authorization_server.log():  # the device's own requests (the agents introspect what they get)
        carried = " ".join(entry["form"].values())
        assert not any(token in carried for token in access) or entry["path"] in ("/token/revocation",
                                                                                  "/token/introspection")


def test_the_messages_kept_for_a_sign_in_are_bounded():
    import asyncio

    from ovos_a2a_solver.agent.sign_in import KEPT_MOST, SignInPrompt, SignInUnderWay

    async def keep_many() -> list:
        awaited = asyncio.get_running_loop().create_future()
        under_way = SignInUnderWay(SignInPrompt("signin", "https://login.example/device", "WDJB-MJHT", 600), awaited)
        for n in range(KEPT_MOST + 3):
            under_way.keep(f"message {n}", None)
        awaited.cancel()
        return under_way.kept

    kept = asyncio.run(keep_many())
    assert [text for text, _ in kept] == [f"message {n}" for n in range(3, KEPT_MOST + 3)]


def test_closing_the_client_stops_its_sign_ins_under_way(sign_in_agent, authorization_server):
    watch = SignInWatch()
    client = client_for(sign_in_agent, authorization_server, watch=watch, timeout=1)
    try:
        with pytest.raises(SignInPendingError):
            client.send_task("my day", session_id="gate")
    finally:
        client.close()
    assert wait_until(lambda: watch.steps, "the sign-in to end", until=lambda steps: len(steps) == 2) == [
        ("started", "gate"), ("stopped", "gate")]
