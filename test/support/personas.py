# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Persona files that tests write: the relay persona, whose only handler is this package's
plugin, pointed at another A2A agent; and the bridge that serves it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Optional

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess


def relay_persona(directory: Path, agent_url: str, timeout: float = 20) -> Path:
    """Write ``relay.json`` in ``directory``: a persona named "relay" whose only handler is
    ``ovos-a2a-solver`` asking ``agent_url``; its path."""
    persona = Path(directory) / "relay.json"
    persona.write_text(json.dumps({"name": "relay", "handlers": ["ovos-a2a-solver"],
                                   "ovos-a2a-solver": {"agent_url": agent_url, "timeout": timeout}}))
    return persona


def relay_bridge(directory: Path, agent_url: str, *args: str, env: Optional[Mapping[str, str]] = None,
                 timeout: float = 20, serve: type[InProcessBridge] | type[BridgeProcess] = InProcessBridge
                 ) -> InProcessBridge | BridgeProcess:
    """The bridge (not yet started: use it in a ``with``) serving :func:`relay_persona` pointed
    at ``agent_url`` (waiting ``timeout`` seconds for its answer), with ``args`` on its command line and ``env`` (``OVOS_A2A_*``) in its
    settings: in this process, or with ``serve=BridgeProcess`` (its log, its process) a process
    whose persona keeps its state in ``directory`` (an in-process one keeps it in the test's)."""
    persona = str(relay_persona(directory, agent_url, timeout))
    if serve is BridgeProcess:
        env = {"XDG_STATE_HOME": str(Path(directory) / "bridge-xdg"), **(env or {})}
    return serve("--persona", persona, *args, backend="persona", env=env)


def shut_down_personas(service) -> None:
    """Shut down the handlers of every persona an ``ovos_persona.PersonaService`` loaded (it
    never does so itself): this package's engines close their agent and messagebus connections."""
    for persona in service.personas.values():
        persona.solvers.shutdown()
