"""Checks the sign-in tests' authorization server (oidc-provider, support/authorization_server.py)
and the person who signs in on it, with plain HTTP as RFC 8628 writes the exchanges: what the
plugin's sign-in tests take for granted about it is checked here first.
"""
import time

import httpx
import pytest

from support.authorization_server import AGENT_CLIENT, Person

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.fixture(scope="module")
def metadata(authorization_server):
    return authorization_server.metadata()


def start(metadata, client_id: str, scope: str = "calendar") -> dict:
    response = httpx.post(metadata["device_authorization_endpoint"], data={"client_id": client_id, "scope": scope})
    assert response.status_code == 200, response.text
    return response.json()


def poll(metadata, client_id: str, started: dict) -> dict:
    return httpx.post(metadata["token_endpoint"], data={"client_id": client_id, "grant_type": DEVICE_GRANT,
                                                        "device_code": started["device_code"]}).json()


def introspect(metadata, token: str) -> dict:
    return httpx.post(metadata["introspection_endpoint"], data={"token": token}, auth=AGENT_CLIENT).json()


def test_the_discovery_document_names_the_device_sign_in(authorization_server, metadata):
    assert metadata["issuer"] == authorization_server.url
    assert metadata["device_authorization_endpoint"] == f"{authorization_server.url}/device/auth"
    assert DEVICE_GRANT in metadata["grant_types_supported"]


def test_a_person_who_approves_gives_the_device_tokens_of_their_account(metadata):
    started = start(metadata, "voice-device")
    assert started["interval"] == 0.5 and started["expires_in"] == 600
    assert started["verification_uri_complete"] == f"{started['verification_uri']}?user_code={started['user_code']}"
    assert poll(metadata, "voice-device", started)["error"] == "authorization_pending"
    assert "Sign-in Success" in Person("ada").approve(started["verification_uri"], started["user_code"])
    tokens = poll(metadata, "voice-device", started)
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "calendar" and tokens["refresh_token"]
    checked = introspect(metadata, tokens["access_token"])
    assert checked["active"] and checked["sub"] == "ada" and checked["scope"] == "calendar"
    assert poll(metadata, "voice-device", started)["error"] == "invalid_grant"  # a device code is used once


def test_a_person_who_aborts_denies_the_device(metadata):
    started = start(metadata, "voice-device")
    Person("bob").deny(started["verification_uri"], started["user_code"])
    assert poll(metadata, "voice-device", started)["error"] == "access_denied"


def test_an_unused_code_expires(metadata):
    started = start(metadata, "brief-code")
    assert started["expires_in"] == 2
    time.sleep(2.2)
    assert poll(metadata, "brief-code", started)["error"] == "expired_token"


def test_polling_sooner_than_the_client_may_is_answered_slow_down(authorization_server, metadata):
    started = start(metadata, "hasty-device")
    assert poll(metadata, "hasty-device", started)["error"] == "authorization_pending"
    assert poll(metadata, "hasty-device", started)["error"] == "slow_down"
    time.sleep(3.1)
    assert poll(metadata, "hasty-device", started)["error"] == "authorization_pending"
    answers = [p["answer"] for p in authorization_server.polls("hasty-device")
               if p["form"]["device_code"] == started["device_code"]]
    assert answers == ["authorization_pending", "slow_down", "authorization_pending"]


def test_a_refresh_token_is_rotated_and_a_revoked_grant_refuses_it(authorization_server, metadata):
    # an account no other test signs in: the server is the worker's, shared by the sign-in tests
    started = start(metadata, "brief-token")
    Person("rotating-refresh").approve(started["verification_uri"], started["user_code"])
    first = poll(metadata, "brief-token", started)
    assert first["expires_in"] == 2
    refreshed = httpx.post(metadata["token_endpoint"], data={
        "client_id": "brief-token", "grant_type": "refresh_token", "refresh_token": first["refresh_token"]}).json()
    assert refreshed["access_token"] != first["access_token"] and refreshed["refresh_token"] != first["refresh_token"]
    assert authorization_server.revoke("rotating-refresh") == 1
    again = httpx.post(metadata["token_endpoint"], data={
        "client_id": "brief-token", "grant_type": "refresh_token", "refresh_token": refreshed["refresh_token"]})
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert introspect(metadata, refreshed["access_token"]) == {"active": False}
    issued = authorization_server.tokens()
    mine = {t["value"] for t in issued["refresh"] if t["account"] == "rotating-refresh"}
    assert mine == {first["refresh_token"], refreshed["refresh_token"]}
