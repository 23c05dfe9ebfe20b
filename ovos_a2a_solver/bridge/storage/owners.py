# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Whose a task is: the owner scope every store and operation is partitioned by, and the
call context that reads and writes the stores as one owner."""
from __future__ import annotations

import json

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import resolve_user_scope


def owner_scope(context: ServerCallContext | None) -> str:
    """Whose a task is: the caller, and the tenant it addressed (the A2A ``tenant`` field, or
    a REST ``/{tenant}/`` path). Every store and operation is partitioned by it, so another
    caller's or another tenant's task is simply not found. Without a tenant it is the caller
    alone (as the a2a-sdk's ``resolve_user_scope``)."""
    user = resolve_user_scope(context)
    tenant = context.tenant if context is not None else ""
    return json.dumps([user, tenant], separators=(",", ":"), ensure_ascii=False) if tenant else user


class Owner(User):
    """An authenticated caller, as the stores know it."""

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def call_context_for(owner: str) -> ServerCallContext:
    """A call context that reads and writes the stores as ``owner``."""
    return ServerCallContext(user=Owner(owner) if owner else UnauthenticatedUser())


def caller_of(owner: str) -> str:
    """The caller of an owner (:func:`owner_scope`), without its tenant."""
    if owner.startswith("["):
        try:
            return json.loads(owner)[0]
        except (ValueError, IndexError, KeyError):
            pass  # a user name that merely starts with "["
    return owner
