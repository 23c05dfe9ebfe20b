"""Signed agent cards (A2A 1.0 §8.4): the bridge signs its card and serves the key; the client,
when told to, refuses any card without a valid signature, and then sends nothing.

The bridge runs as a real process with an EC P-256 key; the fail-closed cases use the scripted
test agents ``signed-*`` (test/support/a2a_agent.py), which sign with the a2a-sdk's own signer.
"""
import base64
import hashlib
import json

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.client.card_resolver import parse_agent_card
from a2a.utils.signing import create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt import PyJWK
from jwt.algorithms import ECAlgorithm

from ovos_a2a_solver import A2AChatEngine, A2AClient, CardSignatureError, CardTrust

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess, BridgeStartError, echo_log

JWKS_PATH = "/.well-known/jwks.json"
V1 = {"A2A-Version": "1.0"}


def pem_of(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_pem_of(key) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def rfc7638_thumbprint(public_key) -> str:
    """Written out here from RFC 7638 §3, independently of the package's own."""
    jwk = ECAlgorithm.to_jwk(public_key, as_dict=True)
    canonical = '{"crv":"%s","kty":"EC","x":"%s","y":"%s"}' % (jwk["crv"], jwk["x"], jwk["y"])
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest()).rstrip(b"=").decode()


def protected_header(signature: dict) -> dict:
    text = signature["protected"]
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """The bridge's key (PEM), its public half as PEM and as a JWK, and a stranger's public key."""
    folder = tmp_path_factory.mktemp("keys")
    key, stranger = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    files = {"private": folder / "bridge.pem", "public": folder / "bridge.pub.pem",
             "jwk": folder / "bridge.pub.jwk", "stranger": folder / "stranger.pub.pem"}
    files["private"].write_bytes(pem_of(key))
    files["public"].write_bytes(public_pem_of(key))
    files["jwk"].write_text(json.dumps(ECAlgorithm.to_jwk(key.public_key(), as_dict=True)))  # no kid: thumbprint
    files["stranger"].write_bytes(public_pem_of(stranger))
    return {"key": key, **files}


@pytest.fixture(scope="module")
def signed_bridge(keys, tmp_path_factory):
    with InProcessBridge("--card-signing-key", str(keys["private"]),
                         call_log=echo_log(tmp_path_factory.mktemp("calls"))) as bridge:
        yield bridge


def card(url: str, **headers) -> httpx.Response:
    response = httpx.get(url + "/.well-known/agent-card.json", headers=headers, timeout=10)
    response.raise_for_status()
    return response


def jcs(value) -> str:
    """RFC 8785 canonical JSON, written out here independently of the package's and the
    SDK's (members sorted by UTF-16 code units; ECMAScript string escapes; integers)."""
    if isinstance(value, dict):
        members = sorted(value.items(), key=lambda item: item[0].encode("utf-16-be"))
        return "{" + ",".join(f"{jcs(k)}:{jcs(v)}" for k, v in members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, str):
        escapes = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                   "\t": "\\t"}
        return '"' + "".join(escapes.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 else c) for c in value) + '"'
    if value is True or value is False or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    assert isinstance(value, int), value
    return str(value)


def verified_signatures(body: dict) -> list[dict]:
    """The signatures of a served card that verify over that very JSON (without
    ``signatures``), each with the key its ``jku`` and ``kid`` name (PyJWT)."""
    import jwt

    payload = base64.urlsafe_b64encode(jcs({k: v for k, v in body.items() if k != "signatures"}).encode())
    valid = []
    for signature in body.get("signatures", []):
        header = protected_header(signature)
        (jwk,) = [k for k in httpx.get(header["jku"], timeout=10).json()["keys"] if k["kid"] == header["kid"]]
        token = f"{signature['protected']}.{payload.rstrip(b'=').decode()}.{signature['signature']}"
        try:
            jwt.api_jws.decode(token, key=PyJWK(jwk), algorithms=[header["alg"]])
        except jwt.PyJWTError:
            continue
        valid.append(signature)
    return valid


# ---- the bridge ------------------------------------------------------------------------

def test_the_bridge_signs_its_card_and_serves_the_public_key(signed_bridge, keys):
    body = card(signed_bridge.url, **V1).json()
    (signature,) = body["signatures"]
    header = protected_header(signature)
    kid = rfc7638_thumbprint(keys["key"].public_key())
    assert header == {"alg": "ES256", "typ": "JOSE", "kid": kid, "jku": signed_bridge.url + JWKS_PATH}

    for url in (signed_bridge.url + JWKS_PATH, signed_bridge.root + JWKS_PATH):
        response = httpx.get(url, timeout=10)
        assert response.status_code == 200 and "max-age" in response.headers["cache-control"]
        (jwk,) = response.json()["keys"]
        assert jwk["kid"] == kid and jwk["alg"] == "ES256"
        assert "d" not in jwk  # the public key only
        assert PyJWK(jwk).key.public_numbers() == keys["key"].public_key().public_numbers()


def test_a_bridge_without_a_key_serves_no_key_set(echo_bridge):
    assert "signatures" not in card(echo_bridge.url, **V1).json()
    assert httpx.get(echo_bridge.url + JWKS_PATH, timeout=10).status_code == 404


@pytest.mark.parametrize("form", [V1, {}], ids=["a2a-1.0-card", "hybrid-card"])
def test_a_plain_a2a_sdk_verifier_accepts_the_bridges_card(signed_bridge, keys, form):
    asked = []

    def key_provider(kid, jku):
        asked.append((kid, jku))
        (jwk,) = httpx.get(jku, timeout=10).json()["keys"]
        return PyJWK(jwk)

    async def resolve():
        async with httpx.AsyncClient() as http:
            return await A2ACardResolver(http, signed_bridge.url).get_agent_card(
                http_kwargs={"headers": form}, signature_verifier=create_signature_verifier(key_provider, ["ES256"]))

    import asyncio
    resolved = asyncio.run(resolve())
    assert resolved.name == signed_bridge.name
    assert len(resolved.signatures) == len(card(signed_bridge.url, **form).json()["signatures"])
    # the signature over the A2A 1.0 card, which the SDK checks, comes first: one key looked up
    assert asked == [(rfc7638_thumbprint(keys["key"].public_key()), signed_bridge.url + JWKS_PATH)]


@pytest.fixture(scope="module")
def signed_bridge_with_tokens(keys, tmp_path_factory):
    """A signed bridge whose card has a security requirement without scopes (an empty value)."""
    with InProcessBridge("--card-signing-key", str(keys["private"]), env={"OVOS_A2A_TOKENS": "signed-card-token-5Rk"},
                         call_log=echo_log(tmp_path_factory.mktemp("calls"))) as bridge:
        yield bridge


@pytest.mark.parametrize("credentials", [False, True], ids=["open", "with-tokens"])
@pytest.mark.parametrize("path", ["/.well-known/agent-card.json", "/.well-known/agent.json",
                                  "/a2a/.well-known/agent-card.json", "/a2a/.well-known/agent.json"])
@pytest.mark.parametrize("form", [V1, {}, {"A2A-Version": "0.3"}], ids=["a2a-1.0", "no-version", "a2a-0.3"])
def test_every_served_form_of_the_card_verifies_over_the_json_served(signed_bridge, signed_bridge_with_tokens,
                                                                     credentials, path, form):
    """Each form, at each card path, carries a signature that verifies over exactly the JSON
    served (JCS of it without ``signatures``), the 0.3 fields of the hybrid form included:
    a card with another ``url`` verifies no more."""
    bridge = signed_bridge_with_tokens if credentials else signed_bridge
    response = httpx.get(bridge.root + path, headers=form, timeout=10)
    response.raise_for_status()
    body = response.json()
    assert verified_signatures(body), body["signatures"]
    if "url" in body:  # the hybrid form: what a 0.3 client connects with is signed
        assert not verified_signatures(dict(body, url="https://elsewhere.example.com/a2a/"))
    assert not verified_signatures(dict(body, name=body["name"] + " (changed)"))


@pytest.mark.timeout(900)
def test_a_genuine_0_3_client_talks_to_the_signed_bridge(signed_bridge):
    import subprocess

    from support import REPO_ROOT
    from support.interop import legacy_python

    client = REPO_ROOT / "test" / "support" / "legacy" / "v03_client.py"
    done = subprocess.run([legacy_python(), str(client), signed_bridge.root, "hello, signed"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for way in ("factory_blocking", "factory_streaming", "legacy_blocking"):
        assert result[way]["state"] == "completed" and result[way]["text"] == "echo: hello, signed", result[way]


def test_the_card_is_signed_once_and_its_etag_is_stable(signed_bridge):
    """ECDSA signatures differ each time one is made: the same bytes twice mean one signing."""
    for form in (V1, {}):
        first, second = card(signed_bridge.url, **form), card(signed_bridge.url, **form)
        assert first.json()["signatures"] == second.json()["signatures"]
        assert first.headers["etag"] == second.headers["etag"]
        assert httpx.get(signed_bridge.url + "/.well-known/agent-card.json", timeout=10,
                         headers={**form, "If-None-Match": first.headers["etag"]}).status_code == 304
    pure, hybrid = card(signed_bridge.url, **V1).json()["signatures"], card(signed_bridge.url).json()["signatures"]
    assert hybrid[0] == pure[0]  # one signature of the A2A 1.0 card; the hybrid form adds its own


def test_replicas_with_one_key_share_the_etag_though_each_signed_on_its_own(keys, tmp_path):
    """Behind a load balancer a client revalidates at any replica: a 304 keeps its copy, whose
    signature (another replica's) is as valid."""
    base = "https://agents.example.com:8443/a2a"  # the public URL of both
    with InProcessBridge("--card-signing-key", str(keys["private"]), "--base-url", base) as first, \
            InProcessBridge("--card-signing-key", str(keys["private"]), "--base-url", base) as second:
        ports = [first.port, second.port]
        one, two = (card(f"http://127.0.0.1:{port}/a2a", **V1) for port in ports)
        assert one.json()["signatures"] != two.json()["signatures"]  # ECDSA: each signing differs
        assert one.headers["etag"] == two.headers["etag"]
        assert httpx.get(f"http://127.0.0.1:{ports[1]}/a2a/.well-known/agent-card.json", timeout=10,
                         headers={**V1, "If-None-Match": one.headers["etag"]}).status_code == 304
        resolved = [parse_agent_card(r.json()) for r in (one, two)]
        verify = create_signature_verifier(lambda kid, jku: PyJWK(ECAlgorithm.to_jwk(keys["key"].public_key(),
                                                                                    as_dict=True)), ["ES256"])
        for c in resolved:
            verify(c)


@pytest.mark.parametrize("kind", ["ec-p256", "ec-p384", "rsa", "ed25519", "jwk-with-kid"])
def test_each_kind_of_key_signs_a_card_an_a2a_sdk_verifier_accepts(kind, tmp_path):
    from ovos_a2a_solver.bridge.edge.card import build_card, sign_card
    from ovos_a2a_solver.bridge.backends.echo import EchoBackend
    from ovos_a2a_solver.bridge.config import BridgeSettings
    from ovos_a2a_solver.jwk import read_public_keys, read_signing_key

    private = {"ec-p256": lambda: ec.generate_private_key(ec.SECP256R1()),
               "ec-p384": lambda: ec.generate_private_key(ec.SECP384R1()),
               "rsa": lambda: rsa.generate_private_key(65537, 2048),
               "ed25519": ed25519.Ed25519PrivateKey.generate,
               "jwk-with-kid": lambda: ec.generate_private_key(ec.SECP256R1())}[kind]()
    path = tmp_path / "key"
    if kind == "jwk-with-kid":
        path.write_text(json.dumps({**ECAlgorithm.to_jwk(private, as_dict=True), "kid": "my-key-2026"}))
    else:
        path.write_bytes(pem_of(private))
    key = read_signing_key(path)
    expected = {"ec-p256": "ES256", "ec-p384": "ES384", "rsa": "RS256", "ed25519": "EdDSA",
                "jwk-with-kid": "ES256"}[kind]
    assert key.algorithm == expected and (key.kid == "my-key-2026") == (kind == "jwk-with-kid")
    signed = sign_card(build_card(BridgeSettings(), EchoBackend()), key, "https://example.com/jwks.json")
    public = tmp_path / "public.pem"
    public.write_bytes(public_pem_of(private))
    (public_key,) = read_public_keys(public)
    if kind != "jwk-with-kid":  # the public half, from its own PEM, is the same JWK with the same kid
        assert public_key.public_jwk == key.public_jwk
    create_signature_verifier(lambda kid, jku: PyJWK(dict(key.public_jwk)), [expected])(signed)


@pytest.mark.parametrize("content, complaint", [
    ("public", "holds a public key; signing needs the private key"),
    ("garbage", "neither a PEM key nor a JWK"),
    (None, "cannot read the key file"),
], ids=["public-key", "not-a-key", "missing"])
def test_a_bad_signing_key_stops_the_start_with_one_line(keys, tmp_path, content, complaint):
    path = tmp_path / "key.pem"
    if content == "public":
        path.write_bytes(keys["public"].read_bytes())
    elif content == "garbage":
        path.write_text("not a key")
    with pytest.raises(BridgeStartError) as refused:
        BridgeProcess("--card-signing-key", str(path))
    assert refused.value.returncode == 2
    lines = refused.value.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ovos-a2a: --card-signing-key (OVOS_A2A_CARD_SIGNING_KEY): ")
    assert complaint in lines[0] and str(path) in lines[0]


# ---- the client, trusting ----------------------------------------------------------------

@pytest.mark.parametrize("source", ["jku", "pem", "jwk", "jwks_url"])
def test_the_client_requires_the_signature_and_talks_to_the_signed_bridge(signed_bridge, keys, source):
    settings = {"jku": {"require_signed_card": True},
                "pem": {"card_public_key": str(keys["public"])},
                "jwk": {"card_public_key": str(keys["jwk"])},
                "jwks_url": {"card_jwks_url": signed_bridge.url + JWKS_PATH}}[source]
    before = signed_bridge.calls()
    with A2AClient(signed_bridge.url, card_trust=CardTrust(**settings)) as client:
        assert "hello" in client.send_task("hello", session_id="s")
    assert signed_bridge.calls() == before + 1


def test_the_plugin_takes_the_signature_settings_from_the_persona(signed_bridge, keys):
    from ovos_plugin_manager.templates.agents import AgentMessage, MessageRole

    engine = A2AChatEngine({"agent_url": signed_bridge.url, "card_public_key": str(keys["public"]),
                            "persist_conversations": False})
    try:
        answer = engine.continue_chat([AgentMessage(role=MessageRole.USER, content="hi there")], session_id="p")
        assert "hi there" in answer.content
    finally:
        engine.shutdown()
    strict = A2AChatEngine({"agent_url": signed_bridge.url, "card_public_key": str(keys["stranger"]),
                            "persist_conversations": False})
    try:
        with pytest.raises(CardSignatureError):
            strict.continue_chat([AgentMessage(role=MessageRole.USER, content="hi")], session_id="p")
    finally:
        strict.shutdown()


def test_the_signature_is_checked_once_per_card_not_per_turn(agent):
    def key_set_reads():
        return sum(1 for r in agent.headers() if r["path"] == "/signed" + JWKS_PATH)

    before_cards, before_keys = agent.stats()["card_fetches"]["signed"], key_set_reads()
    with A2AClient(agent.agent("signed"), card_trust=CardTrust(require_signed_card=True)) as client:
        for n in range(3):
            assert f"turn {n}" in client.send_task(f"turn {n}", session_id="s")
    assert agent.stats()["card_fetches"]["signed"] - before_cards == 1
    assert key_set_reads() - before_keys == 1


def test_a_configured_key_set_url_may_be_on_another_origin(agent):
    """A jku elsewhere is refused unless keys are configured: then they come from there."""
    with A2AClient(agent.agent("signed-foreign-jku"),
                   card_trust=CardTrust(card_jwks_url=agent.agent("signed") + JWKS_PATH)) as client:
        assert "hello" in client.send_task("hello")


# ---- the client, refusing ----------------------------------------------------------------

REFUSALS = [  # (test agent, settings, reason, words of the message)
    ("echo", {"require_signed_card": True}, CardSignatureError.UNSIGNED, "is not signed"),
    ("signed-tampered", {"require_signed_card": True}, CardSignatureError.INVALID, "invalid signature"),
    ("signed-unknown-key", {"require_signed_card": True}, CardSignatureError.UNKNOWN_KEY,
     "unknown key: kid 'stranger-key'"),
    ("signed-foreign-jku", {"require_signed_card": True}, CardSignatureError.FOREIGN_KEY_SET,
     "not on the agent's origin"),
]


@pytest.mark.parametrize("name, settings, reason, words", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_card_without_a_valid_signature_is_refused_and_nothing_is_sent(agent, name, settings, reason, words):
    before = agent.stats()["messages"][name]
    agent.clear_headers()
    with A2AClient(agent.agent(name), card_trust=CardTrust(**settings)) as client:
        for _ in range(4):  # every turn: the same clear error, never the circuit breaker's
            with pytest.raises(CardSignatureError) as refused:
                client.send_task("hello", session_id="s")
            assert refused.value.reason == reason and words in str(refused.value)
        with pytest.raises(CardSignatureError):
            "".join(client.stream_task("hello", session_id="s"))
    assert agent.stats()["messages"][name] == before  # no message reached the agent
    requests = agent.headers()
    assert [r for r in requests if r["method"] == "POST"] == []
    assert all(r["path"] != "/signed" + JWKS_PATH for r in requests)  # a foreign jku is never read


def test_a_card_signed_by_another_key_than_the_configured_one_is_refused(signed_bridge, keys):
    before = signed_bridge.calls()
    with A2AClient(signed_bridge.url, card_trust=CardTrust(card_public_key=str(keys["stranger"]))) as client:
        with pytest.raises(CardSignatureError) as refused:
            client.send_task("hello")
    assert refused.value.reason == CardSignatureError.UNKNOWN_KEY
    assert "unknown key" in str(refused.value) and "card_public_key" in str(refused.value)
    assert signed_bridge.calls() == before


def test_an_unreadable_key_set_refuses_the_card(agent):
    with A2AClient(agent.agent("signed"), card_trust=CardTrust(card_jwks_url=agent.agent("echo") + JWKS_PATH)) as client:
        with pytest.raises(CardSignatureError) as refused:
            client.send_task("hello")
    assert refused.value.reason == CardSignatureError.NO_KEY_SET and "HTTP 404" in str(refused.value)


def test_a_key_set_larger_than_the_cap_is_refused_as_it_streams_in(agent):
    """The huge-card agent streams 50 MB: read as a key set, reading stops at 64 KiB."""
    with A2AClient(agent.agent("signed"), timeout=10, card_trust=CardTrust(
            card_jwks_url=agent.agent("huge-card") + "/.well-known/agent-card.json")) as client:
        with pytest.raises(CardSignatureError) as refused:
            client.send_task("hello")
    assert refused.value.reason == CardSignatureError.NO_KEY_SET and "larger than 64 KiB" in str(refused.value)


@pytest.mark.parametrize("settings, words", [
    ({"card_public_key": "/nonexistent/key.pem"}, "card_public_key: cannot read the key file"),
    ({"card_jwks_url": "ftp://example.com/keys"}, "card_jwks_url must be an http(s) URL"),
    ({"card_public_key": "k.pem", "card_jwks_url": "https://example.com/keys"}, "not both"),
])
def test_bad_signature_settings_stop_the_persona_from_loading(settings, words):
    with pytest.raises(ValueError) as refused:
        A2AChatEngine({"agent_url": "http://127.0.0.1:9/agent", **settings})
    assert words in str(refused.value)
