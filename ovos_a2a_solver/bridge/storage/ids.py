# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The ids the bridge makes for new tasks and contexts: UUIDs of version 7 (RFC 9562), which
begin with the time in milliseconds.

Each id is a key of the tables' indexes (a task's id, a context's). A random id (version 4)
lands on a random page of each index, so that with many tasks nearly every write reads a page
that is not in the cache, and every checkpoint copies as many pages as there were writes. Ids
that grow with time are appended where the last ones went: with 60,000 tasks stored, the
writes of a message cost a sixth less, and no more as the store grows
(``bench/bench_writes.py``). They are still unguessable (74 random bits) and still UUIDs for
any caller."""
from __future__ import annotations

import os
import time
import uuid

from a2a.server.id_generator import IDGenerator, IDGeneratorContext

_MS_BITS = (1 << 48) - 1
_VERSION_7 = 0x7 << 76
_VARIANT_RFC = 0b10 << 62
_RAND_A = ((1 << 12) - 1) << 64   # 12 random bits after the version
_RAND_B = (1 << 62) - 1           # 62 random bits after the variant


def time_ordered_id() -> str:
    """A new UUID of version 7: 48 bits of Unix time in milliseconds, then 74 random bits."""
    random_bits = int.from_bytes(os.urandom(10), "big")
    value = ((time.time_ns() // 1_000_000) & _MS_BITS) << 80 | _VERSION_7 | random_bits & (_RAND_A | _RAND_B) \
        | _VARIANT_RFC
    return str(uuid.UUID(int=value))


class TimeOrderedIds(IDGenerator):
    """:func:`time_ordered_id` for the a2a-sdk's request context (new contexts' ids)."""

    def generate(self, context: IDGeneratorContext) -> str:
        return time_ordered_id()
