# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Bridge replicas on the tests' PostgreSQL database (``OVOS_A2A_TEST_POSTGRES``).

    with replica("a", env={"OVOS_A2A_TOKENS": TOKEN}) as a, replica("b", env=...) as b:
        a.replica   # 'a-1f2e3d4c': its name in the database
"""
from __future__ import annotations

import os
import uuid
from typing import Mapping, Optional

from support.bridge_process import BridgeProcess
from support.postgres import POSTGRES_VAR


def replica(name: str, *args: str, db: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
            **bridge_options) -> BridgeProcess:
    """A bridge (not yet started: use it in a ``with``) on the database ``db`` (by default the
    one ``OVOS_A2A_TEST_POSTGRES`` names), with the command-line ``args``, the environment
    ``env`` added, and the replica name ``name`` with a suffix of its own, so that no other run
    of the test shares it; that name is its ``.replica``. ``bridge_options`` go to
    :class:`~support.bridge_process.BridgeProcess`."""
    url = db or os.environ.get(POSTGRES_VAR)
    assert url, f"CI must provide {POSTGRES_VAR} (see .ci/run)"
    unique = f"{name}-{uuid.uuid4().hex[:8]}"
    process = BridgeProcess("--db", url, *args, env={**(env or {}), "OVOS_A2A_REPLICA": unique}, **bridge_options)
    process.replica = unique
    return process
