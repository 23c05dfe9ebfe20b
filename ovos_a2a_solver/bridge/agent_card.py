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
