"""PostgreSQL databases for tests: the server is named by ``OVOS_A2A_TEST_POSTGRES``.

* :func:`run_statement` runs one statement on a database, outside a transaction.
* :func:`new_database` makes a new, empty database beside the one of a URL and drops it
  afterwards (a context manager); :func:`create_database` and :func:`drop_database` are its
  two halves.

With pytest-xdist, conftest.py gives each worker a new database of its own this way and points
``OVOS_A2A_TEST_POSTGRES`` at it, so that the replicas of one worker's tests never meet (or
take over the runs of) those of another worker's tests; one process runs them one at a time
on it, as a run without workers does on the database it is given.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from typing import Iterator

#: the environment variable that names the tests' PostgreSQL database
POSTGRES_VAR = "OVOS_A2A_TEST_POSTGRES"


def plain_dsn(url: str) -> str:
    """The database of ``url`` (SQLAlchemy form) as asyncpg names it."""
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def run_on(url: str, statement: str, *args):
    """The value of ``statement`` (its first column of its first row) on the database of ``url``
    (SQLAlchemy form), outside a transaction."""
    import asyncpg

    async def run():
        connection = await asyncpg.connect(plain_dsn(url))
        try:
            return await connection.fetchval(statement, *args)
        finally:
            await connection.close()

    return asyncio.run(run())


def run_statement(url: str, statement: str) -> None:
    """Run ``statement`` on the database of ``url`` (SQLAlchemy form), outside a transaction."""
    run_on(url, statement)


def create_database(url: str, prefix: str = "ovos_a2a_fresh") -> str:
    """Make a new, empty database named ``PREFIX_<random>`` on the server of ``url``; its URL."""
    from sqlalchemy.engine import make_url

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    run_statement(url, f'CREATE DATABASE "{name}"')
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str, admin_url: str) -> None:
    """Drop the database of ``url`` (closing its connections), through the database of ``admin_url``."""
    from sqlalchemy.engine import make_url

    name = make_url(url).database
    run_statement(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def new_database(url: str | None = None, prefix: str = "ovos_a2a_fresh") -> Iterator[str]:
    """The URL of a new, empty database beside the one of ``url`` (by default the tests' own,
    :data:`POSTGRES_VAR`), dropped afterwards."""
    url = url or os.environ.get(POSTGRES_VAR)
    assert url, f"CI must provide {POSTGRES_VAR} (see .ci/run)"
    fresh = create_database(url, prefix)
    try:
        yield fresh
    finally:
        drop_database(fresh, url)
