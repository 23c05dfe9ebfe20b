# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""OVOS + A2A: answer a persona through a remote Agent2Agent agent.

Public names load lazily: ``import ovos_a2a_solver`` imports neither the a2a-sdk,
httpx, gRPC nor OPM (OPM imports every plugin module whenever a persona is built).

    from ovos_a2a_solver import A2AClient          # or AsyncA2AClient, for asyncio code
    from ovos_a2a_solver import RetryPolicy        # and BreakerPolicy, CardTrust, AnswerLimits
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ovos_a2a_solver.version import __version__

_EXPORTS = {
    "A2AClient": "ovos_a2a_solver.client",
    "AsyncA2AClient": "ovos_a2a_solver.client",
    "AgentCard": "ovos_a2a_solver.agent.cards",
    "AgentSkill": "ovos_a2a_solver.agent.cards",
    "AgentInterface": "ovos_a2a_solver.agent.cards",
    "AgentTaskError": "ovos_a2a_solver.agent.exceptions",
    "IncompleteAnswerError": "ovos_a2a_solver.agent.exceptions",
    "NoAnswerError": "ovos_a2a_solver.agent.exceptions",
    "ReplyTooLargeError": "ovos_a2a_solver.agent.exceptions",
    "CircuitOpenError": "ovos_a2a_solver.agent.exceptions",
    "StillWorkingError": "ovos_a2a_solver.agent.exceptions",
    "CardSignatureError": "ovos_a2a_solver.agent.exceptions",
    "MissingCredentialError": "ovos_a2a_solver.agent.exceptions",
    "SignInRequiredError": "ovos_a2a_solver.agent.exceptions",
    "SignInError": "ovos_a2a_solver.agent.exceptions",
    "SignInPendingError": "ovos_a2a_solver.agent.exceptions",
    "SignInEvent": "ovos_a2a_solver.agent.sign_in",
    "SignInPrompt": "ovos_a2a_solver.agent.sign_in",
    "TokenStore": "ovos_a2a_solver.agent.tokens",
    "Credentials": "ovos_a2a_solver.agent.credentials",
    "RetryPolicy": "ovos_a2a_solver._defaults",
    "BreakerPolicy": "ovos_a2a_solver._defaults",
    "CardTrust": "ovos_a2a_solver._defaults",
    "AnswerLimits": "ovos_a2a_solver._defaults",
    "ConversationStore": "ovos_a2a_solver.conversations.conversation_store",
    "A2AChatEngine": "ovos_a2a_solver.engine",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:  # pragma: no cover
    from ovos_a2a_solver._defaults import AnswerLimits, BreakerPolicy, CardTrust, RetryPolicy
    from ovos_a2a_solver.agent.credentials import Credentials
    from ovos_a2a_solver.agent.cards import AgentCard, AgentInterface, AgentSkill
    from ovos_a2a_solver.client import A2AClient, AsyncA2AClient
    from ovos_a2a_solver.conversations.conversation_store import ConversationStore
    from ovos_a2a_solver.engine import A2AChatEngine
    from ovos_a2a_solver.agent.exceptions import (AgentTaskError, CardSignatureError, CircuitOpenError,
                                                  IncompleteAnswerError, MissingCredentialError, NoAnswerError,
                                                  ReplyTooLargeError, SignInError, SignInPendingError,
                                                  SignInRequiredError, StillWorkingError)
    from ovos_a2a_solver.agent.sign_in import SignInEvent, SignInPrompt
    from ovos_a2a_solver.agent.tokens import TokenStore


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ovos_a2a_solver' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
