# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The words for task states, written once for the plugin, the bridge and the command line.

This module depends on ``a2a.types`` only: it is the one place the plugin half and the
bridge share. A2A 1.0 names states ``TASK_STATE_INPUT_REQUIRED``; people (and A2A 0.3)
say ``input-required``: :func:`state_name` and :func:`state_from_name` translate.
"""
from __future__ import annotations

from a2a.types import TaskState

#: Final: the task will never change again.
TERMINAL = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                      TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED})
#: The agent waits for the user; the next message of the conversation continues the task.
WAITING_FOR_USER = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
#: Nothing is being worked on: the task is final or waits for the user.
SETTLED = TERMINAL | WAITING_FOR_USER
#: Work is going on (or about to).
ACTIVE = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
#: Every state a task can be in, in the order A2A lists them.
KNOWN = tuple(state for state in TaskState.values() if state != TaskState.TASK_STATE_UNSPECIFIED)


def state_name(state: int) -> str:
    """``TASK_STATE_INPUT_REQUIRED`` -> ``"input-required"``; an unknown number -> ``"unknown (N)"``."""
    try:
        return TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")
    except ValueError:
        return f"unknown ({state})"


def state_from_name(name: str) -> int:
    """``"input-required"`` (or ``TASK_STATE_INPUT_REQUIRED``) -> the enum value; ``ValueError`` if unknown."""
    key = name.strip().upper().replace("-", "_")
    key = key if key.startswith("TASK_STATE_") else "TASK_STATE_" + key
    if key not in TaskState.keys() or key == "TASK_STATE_UNSPECIFIED":
        raise ValueError(f"unknown task state {name!r}; one of: {', '.join(STATE_NAMES)}")
    return TaskState.Value(key)


#: The readable names of every known state (for command-line choices and messages).
STATE_NAMES = tuple(state_name(state) for state in KNOWN)
