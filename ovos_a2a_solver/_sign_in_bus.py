# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A person's sign-in on the OVOS messagebus, for a companion app or a screen that listens.

The persona says where to go and which code to enter; a screen can do better, and show the
address that holds the code (``verification_uri_complete``, as a link or a QR code). So each
step of a sign-in (see ``agent.sign_in.SignInEvent``) is put on the bus, forwarded from the
message the turn came in on (its destination, a HiveMind satellite, and its session go with it):

``ovos.a2a.sign_in``, when the code is said (``step`` "started") and said again to a person
who speaks while it is awaited ("waiting")::

    {"step": "started", "agent": "the calendar agent", "agent_url": "https://...",
     "verification_uri": "https://example.com/device", "verification_uri_complete":
     "https://example.com/device?user_code=WDJB-MJHT", "user_code": "WDJB-MJHT",
     "spoken_code": "W-D-J-B M-J-H-T", "expires_in": 600, "session_id": "default"}

``ovos.a2a.sign_in.ended``, when it ended (a screen takes the code away): the same data, with
``step`` "signed in", "denied", "expired", "refused" or "stopped".
"""
from __future__ import annotations

from typing import Any

#: the message of a sign-in's code said (started, or said again)
SIGN_IN = "ovos.a2a.sign_in"
#: the message of a sign-in's end
SIGN_IN_ENDED = "ovos.a2a.sign_in.ended"


def sign_in_message(event: Any, agent_url: str, turn: Any) -> Any:
    """The bus message of one sign-in ``event`` (an ``agent.sign_in.SignInEvent``), forwarded from ``turn``."""
    from ovos_a2a_solver.agent.sign_in import spelled

    prompt = event.prompt
    data = {"step": event.step, "agent": prompt.agent, "agent_url": agent_url,
            "verification_uri": prompt.verification_uri,
            "verification_uri_complete": prompt.verification_uri_complete or prompt.verification_uri,
            "user_code": prompt.user_code, "spoken_code": spelled(prompt.user_code),
            "expires_in": prompt.expires_in, "session_id": event.session_id}
    kind = SIGN_IN if event.step in ("started", "waiting") else SIGN_IN_ENDED
    return turn.forward(kind, data)
