# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""OVOS + A2A: answer a persona through a remote Agent2Agent agent.

Public names load lazily: ``import ovos_a2a_solver`` imports neither the a2a-sdk,
httpx, gRPC nor OPM (OPM imports every plugin module whenever a persona is built).

    from ovos_a2a_solver import A2AClient          # or AsyncA2AClient, for asyncio code
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ovos_a2a_solver.version import __version__

_EXPORTS = {
    "A2AClient": "ovos_a2a_solver.client",
    "AsyncA2AClient": "ovos_a2a_solver.client",
    "AgentCard": "ovos_a2a_solver._cards",
    "AgentSkill": "ovos_a2a_solver._cards",
    "AgentInterface": "ovos_a2a_solver._cards",
    "AgentTaskError": "ovos_a2a_solver._errors",
    "IncompleteAnswerError": "ovos_a2a_solver._errors",
    "CircuitOpenError": "ovos_a2a_solver._errors",
    "StillWorkingError": "ovos_a2a_solver._errors",
    "CardSignatureError": "ovos_a2a_solver._errors",
    "MissingCredentialError": "ovos_a2a_solver._errors",
    "Credentials": "ovos_a2a_solver._auth",
    "ConversationStore": "ovos_a2a_solver._conversations",
    "A2AChatEngine": "ovos_a2a_solver.engine",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver._auth import Credentials
    from ovos_a2a_solver._cards import AgentCard, AgentInterface, AgentSkill
    from ovos_a2a_solver.client import A2AClient, AsyncA2AClient
    from ovos_a2a_solver._conversations import ConversationStore
    from ovos_a2a_solver.engine import A2AChatEngine
    from ovos_a2a_solver._errors import (AgentTaskError, CardSignatureError, CircuitOpenError,
                                         IncompleteAnswerError, MissingCredentialError, StillWorkingError)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ovos_a2a_solver' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
