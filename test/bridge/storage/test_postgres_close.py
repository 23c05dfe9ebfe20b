# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Closing the bridge's PostgreSQL connections (at shutdown) never waits without end: a
connection still in use, one that a statement holds or that was never given back, is cut once
the close has waited its bound."""
from __future__ import annotations

import asyncio
import os
import time

import asyncpg
import pytest

from ovos_a2a_solver.bridge.storage.postgres import PostgresDatabase
from support.postgres import plain_dsn

POSTGRES = os.environ.get("OVOS_A2A_TEST_POSTGRES")

pytestmark = pytest.mark.skipif(not POSTGRES, reason="OVOS_A2A_TEST_POSTGRES names no PostgreSQL database")


@pytest.mark.parametrize("held_by", ["never given back", "a statement that does not return"])
def test_closing_the_database_cuts_a_connection_still_in_use_once_its_bound_passed(held_by):
    async def scenario() -> tuple[float, bool]:
        db = PostgresDatabase(POSTGRES, min_size=1, max_size=2)
        pool = await db.pool()
        held = await pool.acquire()
        pid = held.get_server_pid()
        sleeping = None
        if held_by == "a statement that does not return":
            sleeping = asyncio.ensure_future(held.execute("SELECT pg_sleep(60)", timeout=120))
            deadline = time.monotonic() + 10
            while not await pool.fetchval("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' "
                                          "AND state = 'active'"):
                assert time.monotonic() < deadline, "the statement was not seen running within 10 s"
                await asyncio.sleep(0.05)
        began = time.monotonic()
        async with asyncio.timeout(30):  # asyncpg's own close waits for the connection without end
            await db.aclose(within=1.0)
        took = time.monotonic() - began
        if sleeping is not None:  # cut: the statement ends with the connection's error, not its result
            ended = (await asyncio.gather(sleeping, return_exceptions=True))[0]
            return took, isinstance(ended, (asyncpg.PostgresConnectionError, asyncpg.InterfaceError))
        return took, await session_ended(pid)  # cut: its session on the server ends

    async def session_ended(pid: int) -> bool:
        """Whether the database's session ``pid`` ended (within 10 s: its end may take a moment to show)."""
        watcher = await asyncpg.connect(plain_dsn(POSTGRES))
        try:
            deadline = time.monotonic() + 10
            while await watcher.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid):
                if time.monotonic() > deadline:
                    return False
                await asyncio.sleep(0.05)
            return True
        finally:
            await watcher.close()

    took, cut = asyncio.run(scenario())
    assert cut, "the connection in use was left open"
    assert 1.0 <= took < 10, f"the close took {took:.1f} s (bound: 1 s)"
