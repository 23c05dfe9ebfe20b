"""PostgreSQL for tests: a new, empty database of its own, beside the one ``OVOS_A2A_TEST_POSTGRES`` names."""
from __future__ import annotations

import asyncio
import contextlib
import os
import uuid


def run_on(url: str, statement: str, *args):
    """The value of ``statement`` (its first column of its first row) on the database of ``url``,
    outside a transaction."""
    import asyncpg
    from sqlalchemy.engine import make_url

    async def run():
        connection = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(False))
        try:
            return await connection.fetchval(statement, *args)
        finally:
            await connection.close()

    return asyncio.run(run())


@contextlib.contextmanager
def new_database():
    """The URL of a new, empty database (dropped afterwards)."""
    from sqlalchemy.engine import make_url

    url = os.environ.get("OVOS_A2A_TEST_POSTGRES")
    assert url, "CI must provide OVOS_A2A_TEST_POSTGRES (see .ci/run)"
    name = f"ovos_a2a_fresh_{uuid.uuid4().hex[:10]}"
    run_on(url, f'CREATE DATABASE "{name}"')
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        run_on(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
