# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's agent card: capability first.

The skills are the persona's own, when its file declares them (with the examples it
answers); else a conversation skill in the persona's own description, then one skill per
handler the persona really has: no example the persona may not answer. The card is built once at start-up from the persona's
configuration, so it is served at once whatever the persona is doing; with a signing key it
is signed then too, once per form served (:func:`sign_card`, :func:`sign_as_served`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from a2a.types import (AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, HTTPAuthSecurityScheme,
                       SecurityRequirement, SecurityScheme, StringList)
from a2a.utils.constants import TransportProtocol

from ovos_a2a_solver.bridge.backends.protocols import Backend
from ovos_a2a_solver.bridge.config import INPUT_MODES, BridgeSettings, SettingsError, names_of
from ovos_a2a_solver.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver.jwk import CardKey

MAX_DESCRIPTION = 200


def card_version(version: str = __version__) -> str:
    """``version`` (PEP 440, as the package names itself: ``0.1.0a1``) as Semantic Versioning,
    which card validators ask for: ``0.1.0-a1``; a development release is a pre-release too
    (``0.1.0.dev3`` -> ``0.1.0-dev.3``), a post release build metadata (``+post.1``). A version
    of another form is given as it is."""
    import re

    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?", version)
    if match is None:
        return version
    major, minor, patch, pre, pre_number, post, dev = match.groups()
    prerelease = ([f"{pre}{pre_number}"] if pre else []) + (["dev", dev] if dev else [])
    return (f"{major}.{minor}.{patch or 0}" + ("-" + ".".join(prerelease) if prerelease else "")
            + (f"+post.{post}" if post else ""))

def conversation_skill(name: str, description: str) -> AgentSkill:
    """What any persona does, in its own words: its description, and no example it may not answer."""
    return AgentSkill(id="conversation", name="Conversation",
                      description=_short(f"Talk with {name}: {description}") + " Send follow-ups with the same "
                                  "contextId and it remembers what was said.",
                      tags=["conversation", "ovos"], input_modes=list(INPUT_MODES), output_modes=["text/plain"])


def build_card(settings: BridgeSettings, backend: Backend) -> AgentCard:
    """The card for ``backend`` served at ``settings.public_url``: JSON-RPC and HTTP+JSON there,
    and gRPC (``HOST:PORT``) when it is served, unless ``settings.grpc_unlisted`` leaves it out
    so that every interface of the card is on the card's own origin."""
    url = settings.public_url
    name = settings.name or backend.name
    # never empty: the a2a-sdk leaves empty required fields out of what it signs, and
    # verifiers that follow A2A 1.0 §8.4.1 to the letter would not (see sign_card)
    description = _short(settings.description or backend.description, 1000) or f"The OVOS persona {name}."
    capabilities = backend.capabilities()
    # the persona's own skills when its file declares them; else what it is, then one skill per handler
    skills = [] if any(c.declared for c in capabilities) else [conversation_skill(name, description)]
    seen = {s.id for s in skills}
    for capability in capabilities:
        if capability.id in seen:
            continue
        seen.add(capability.id)
        skills.append(AgentSkill(id=capability.id, name=capability.name,
                                 description=_short(capability.description) or capability.name,
                                 tags=list(capability.tags), examples=list(capability.examples)))
    card = AgentCard(
        name=name,
        description=description,
        version=card_version(),
        provider=AgentProvider(organization="OpenVoiceOS", url="https://openvoiceos.org"),
        supported_interfaces=[
            AgentInterface(url=url + "/", protocol_binding=TransportProtocol.JSONRPC, protocol_version="1.0"),
            AgentInterface(url=url + "/rest", protocol_binding=TransportProtocol.HTTP_JSON, protocol_version="1.0"),
            AgentInterface(url=url + "/", protocol_binding=TransportProtocol.JSONRPC, protocol_version="0.3"),
            # a 0.3 card's additionalInterfaces (its url and preferredTransport are the first 0.3 interface's)
            AgentInterface(url=url + "/rest", protocol_binding=TransportProtocol.HTTP_JSON, protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=list(INPUT_MODES),
        default_output_modes=["text/plain"],
        skills=skills,
    )
    grpc = grpc_interface(settings)
    if grpc is not None and not settings.grpc_unlisted:
        card.supported_interfaces.append(grpc)
    if settings.password:
        card.security_schemes["basic"].CopyFrom(SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Basic")))
        card.security_requirements.append(SecurityRequirement(schemes={"basic": StringList()}))
    if settings.tokens:
        card.security_schemes["bearer"].CopyFrom(SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")))
        card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    return card


def grpc_interface(settings: BridgeSettings) -> AgentInterface | None:
    """The gRPC interface the bridge serves (A2A 1.0), ``None`` without ``grpc_port``; the
    card names it unless ``grpc_unlisted``. Its URL is ``HOST:PORT``, the host of
    ``public_url``: the form A2A 1.0 gives a gRPC address (a2a.proto, ``AgentInterface.url``),
    and the target the a2a-sdk's client hands its gRPC channel factory."""
    if not settings.grpc_port:
        return None
    host = settings.public_url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[0]
    return AgentInterface(url=f"{host}:{settings.grpc_port}", protocol_binding=TransportProtocol.GRPC,
                          protocol_version="1.0")


def read_card_signing_key(settings: BridgeSettings) -> "CardKey | None":
    """The key that signs the card (``card_signing_key``), or ``None`` when there is none.
    A file that cannot be used raises :class:`SettingsError`, one line naming the setting."""
    if not settings.card_signing_key:
        return None
    from ovos_a2a_solver.jwk import KeyFileError, read_signing_key

    try:
        return read_signing_key(settings.card_signing_key)
    except KeyFileError as exc:
        raise SettingsError(f"{names_of('card_signing_key')}: {exc}") from None


def sign_card(card: AgentCard, key: "CardKey", jku: str) -> AgentCard:
    """``card`` with a signature by ``key`` appended: a detached JWS (A2A 1.0 §8.4) whose
    protected header names ``alg``, ``kid``, ``typ: JOSE`` and ``jku``, the URL of the JWK
    Set that holds the public key. Made with the a2a-sdk's signer, once per card.

    This signature covers the A2A 1.0 card as the a2a-sdk reads it: a 1.x client checks it
    over the card it parsed, whichever form it fetched. Each form served carries it, and
    also one over that form as served where this one does not cover it (see
    :func:`sign_as_served`).

    Canonicalisation: the a2a-sdk drops every empty value, empty required fields included,
    before RFC 8785, where A2A 1.0 §8.4.1 keeps required fields. Verifiers built on the
    a2a-sdk (this package's client among them) agree with this signer whatever the card
    holds; :func:`build_card` leaves no required field empty, so that spec-literal verifiers
    agree too.
    """
    from a2a.utils.signing import create_agent_card_signer

    signer = create_agent_card_signer(key.private, {"alg": key.algorithm, "kid": key.kid, "jku": jku,
                                                    "typ": "JOSE"})
    return signer(card)


def sign_as_served(body: dict, key: "CardKey", jku: str) -> dict:
    """``body`` (a form of the card, as it is served) with a signature over exactly that JSON
    appended: a detached JWS over the RFC 8785 canonical JSON of ``body`` without
    ``signatures``, with the protected header of :func:`sign_card`. Unchanged when a
    signature it carries already verifies so (the A2A 1.0 form of a card without empty
    values: the a2a-sdk's own signature covers it).

    The a2a-sdk's signature leaves out the 0.3 fields of the hybrid form (``url``,
    ``protocolVersion``, ``preferredTransport``, ``security``: what a 0.3 client connects
    with) and every empty value (``{"bearer": {}}``, a security requirement without scopes);
    this one covers every byte a verifier reads."""
    from jwt import PyJWTError, api_jws
    from jwt.utils import base64url_encode

    payload = canonical_json({k: v for k, v in body.items() if k != "signatures"}).encode()
    signatures = list(body.get("signatures", []))
    encoded = base64url_encode(payload).decode()
    for signature in signatures:
        try:
            api_jws.decode(f"{signature['protected']}.{encoded}.{signature['signature']}",
                           key=key.verification_key(), algorithms=[key.algorithm])
            return body
        except (PyJWTError, KeyError):
            continue
    token = api_jws.encode(payload=payload, key=key.private, algorithm=key.algorithm,
                           headers={"alg": key.algorithm, "kid": key.kid, "jku": jku, "typ": "JOSE"})
    protected, _, signature = token.split(".")
    return dict(body, signatures=[*signatures, {"protected": protected, "signature": signature}])


def canonical_json(value) -> str:
    """RFC 8785 (JCS): members sorted by their UTF-16 code units, no whitespace, strings
    escaped as ECMAScript does. Numbers: integers only (a card holds no others); anything
    else raises ``TypeError``."""
    import json

    if isinstance(value, dict):
        members = sorted(value.items(), key=lambda item: item[0].encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical_json(v) for k, v in members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    if value is None or isinstance(value, (bool, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53):
        return str(int(value))
    raise TypeError(f"no canonical JSON for {value!r} here")


def _short(text: str, limit: int = MAX_DESCRIPTION) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


class CardEndpoint:
    """Serves the card, in the form the caller's A2A version reads, with HTTP caching.

    * To a request that says ``A2A-Version: 1.x`` (header, or the ``A2A-Version`` query
      parameter): the A2A 1.0 card exactly (``supportedInterfaces``, nothing of 0.3), which
      validates against the A2A 1.0 JSON schema.
    * To a request without a version (A2A 1.0: "0.3 will be assumed for empty header"): the
      same card plus the 0.3 top-level fields the a2a-sdk adds (``url``, ``protocolVersion``,
      ``preferredTransport``, ``additionalInterfaces``), which a genuine 0.3 client needs to
      find the 0.3 endpoints; a
      1.0 client that sends no version reads it too (it ignores unknown fields).

    With ``signing`` (the key and the URL of its key set), each form carries the card's
    signature (:func:`sign_card`, over the A2A 1.0 card) and, where that one does not cover
    it, a signature over the form as served (:func:`sign_as_served`): every form verifies
    over the JSON it is, and a 1.x client verifies the card it parsed from either.

    ``ETag`` (one per form), ``Last-Modified`` (the bridge's start), ``Cache-Control`` and
    ``Vary: A2A-Version`` on every answer; an ``If-None-Match`` (or, without one, an
    ``If-Modified-Since``) that still holds gets a 304. A signed card's ETag covers its
    signatures' protected headers (key, algorithm, key set) but not their bytes: replicas
    that share the card and the key share the ETag, although each signed on its own (an
    ECDSA signature differs each time it is made) and either signature is valid.
    """

    def __init__(self, card: AgentCard, cache_control: str = "max-age=300",
                 signing: "tuple[CardKey, str] | None" = None) -> None:
        import time
        from email.utils import formatdate

        from a2a.server.request_handlers.response_helpers import agent_card_to_dict
        from google.protobuf.json_format import MessageToDict

        self.modified = int(time.time())
        common = {"Last-Modified": formatdate(self.modified, usegmt=True), "Cache-Control": cache_control,
                  "Vary": "A2A-Version"}
        self.forms = {}
        for pure, body in ((True, MessageToDict(card)), (False, agent_card_to_dict(card))):
            if signing is not None:
                body = sign_as_served(body, *signing)
            self.forms[pure] = (body, {**common, "ETag": _etag(body)})

    async def serve(self, request):
        from starlette.responses import JSONResponse, Response

        body, headers = self.forms[wants_v1(request)]
        if not_modified(request.headers, headers["ETag"], self.modified):
            return Response(status_code=304, headers=headers)
        return JSONResponse(body, headers=headers)


def wants_v1(request) -> bool:
    """Whether the request names A2A 1.x or later (header first, then query parameter)."""
    version = request.headers.get("a2a-version") or next(
        (v for k, v in request.query_params.multi_items() if k.lower() == "a2a-version"), "")
    major = version.strip().split(".", 1)[0]
    return major.isdigit() and int(major) >= 1


def not_modified(headers, etag: str, modified: int) -> bool:
    """Whether the client's copy is current: its ``If-None-Match`` names ``etag`` (weakly),
    or it sent none and its ``If-Modified-Since`` is not older than ``modified``."""
    from email.utils import parsedate_to_datetime

    if_none_match = headers.get("if-none-match")
    if if_none_match is not None:
        tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
        return "*" in tags or etag.removeprefix("W/") in tags
    if_modified_since = headers.get("if-modified-since")
    if if_modified_since:
        try:
            return parsedate_to_datetime(if_modified_since).timestamp() >= modified
        except (TypeError, ValueError):
            return False
    return False


def _etag(body: dict) -> str:
    import hashlib
    import json

    if "signatures" in body:
        body = dict(body, signatures=[{k: v for k, v in s.items() if k != "signature"} for s in body["signatures"]])
    return 'W/"' + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32] + '"'
