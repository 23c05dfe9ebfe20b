# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Persona files that tests write: the relay persona, whose only handler is this package's
plugin, pointed at another A2A agent."""
from __future__ import annotations

import json
from pathlib import Path


def relay_persona(directory: Path, agent_url: str, timeout: float = 20) -> Path:
    """Write ``relay.json`` in ``directory``: a persona named "relay" whose only handler is
    ``ovos-a2a-solver`` asking ``agent_url``; its path."""
    persona = Path(directory) / "relay.json"
    persona.write_text(json.dumps({"name": "relay", "handlers": ["ovos-a2a-solver"],
                                   "ovos-a2a-solver": {"agent_url": agent_url, "timeout": timeout}}))
    return persona
