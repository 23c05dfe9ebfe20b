# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's agent card: capability first.

A curated skill list says what any persona behind the bridge can do; then one skill per
handler the persona really has. The card is built once at start-up from the persona's
configuration, so it is served at once whatever the persona is doing.
"""
from __future__ import annotations

from a2a.types import (AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, HTTPAuthSecurityScheme,
                       SecurityRequirement, SecurityScheme, StringList)
from a2a.utils.constants import TransportProtocol

from ovos_a2a_solver.bridge.backends import Backend
from ovos_a2a_solver.bridge.config import BridgeSettings
from ovos_a2a_solver.version import __version__

MAX_DESCRIPTION = 200

CURATED_SKILLS = (
    AgentSkill(id="conversation", name="Conversation",
               description="Holds a spoken-style conversation: send follow-ups with the same contextId and the "
                           "persona remembers what was said.",
               tags=["chat", "conversation", "ovos"], examples=["hello", "what did I just tell you?"],
               input_modes=["text/plain"], output_modes=["text/plain"]),
    AgentSkill(id="questions", name="Questions and answers",
               description="Answers questions with the OpenVoiceOS persona's own knowledge and plugins, sentence "
                           "by sentence when streaming.",
               tags=["qa", "ovos"], examples=["what is the speed of light?"],
               input_modes=["text/plain"], output_modes=["text/plain"]),
)


def build_card(settings: BridgeSettings, backend: Backend) -> AgentCard:
    """The card for ``backend`` served at ``settings.public_url``."""
    url = settings.public_url
    skills = list(CURATED_SKILLS)
    seen = {s.id for s in skills}
    for capability in backend.capabilities():
        if capability.id in seen:
            continue
        seen.add(capability.id)
        skills.append(AgentSkill(id=capability.id, name=capability.name,
                                 description=_short(capability.description), tags=["handler"]))
    card = AgentCard(
        name=settings.name or backend.name,
        description=_short(settings.description or backend.description, 1000),
        version=__version__,
        provider=AgentProvider(organization="OpenVoiceOS", url="https://openvoiceos.org"),
        supported_interfaces=[
            AgentInterface(url=url + "/", protocol_binding=TransportProtocol.JSONRPC, protocol_version="1.0"),
            AgentInterface(url=url + "/rest", protocol_binding=TransportProtocol.HTTP_JSON, protocol_version="1.0"),
            AgentInterface(url=url + "/", protocol_binding=TransportProtocol.JSONRPC, protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=skills,
    )
    if settings.grpc_port:
        host = settings.public_url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[0]
        card.supported_interfaces.append(AgentInterface(url=f"{host}:{settings.grpc_port}",
                                                        protocol_binding=TransportProtocol.GRPC,
                                                        protocol_version="1.0"))
    if settings.password:
        card.security_schemes["basic"].CopyFrom(SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Basic")))
        card.security_requirements.append(SecurityRequirement(schemes={"basic": StringList()}))
    if settings.tokens:
        card.security_schemes["bearer"].CopyFrom(SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer")))
        card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    return card


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
      ``preferredTransport``), which a genuine 0.3 client needs to find the 0.3 endpoint; a
      1.0 client that sends no version reads it too (it ignores unknown fields).

    ``ETag`` (one per form), ``Last-Modified`` (the bridge's start), ``Cache-Control`` and
    ``Vary: A2A-Version`` on every answer; an ``If-None-Match`` (or, without one, an
    ``If-Modified-Since``) that still holds gets a 304.
    """

    def __init__(self, card: AgentCard, cache_control: str = "max-age=300") -> None:
        import time
        from email.utils import formatdate

        from a2a.server.request_handlers.response_helpers import agent_card_to_dict
        from google.protobuf.json_format import MessageToDict

        self.modified = int(time.time())
        common = {"Last-Modified": formatdate(self.modified, usegmt=True), "Cache-Control": cache_control,
                  "Vary": "A2A-Version"}
        self.forms = {}
        for pure, body in ((True, MessageToDict(card)), (False, agent_card_to_dict(card))):
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

    return 'W/"' + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32] + '"'
