"""The run's trust store: empty. No test reaches a server whose certificate a public
authority signed (every peer is on loopback, and a test of TLS brings its own authority), so
the processes of the run trust no authority unless a test says which.

That is also what keeps the suite affordable: an ``httpx`` client reads its trust store when
it is made, and reading a system bundle (``SSL_CERT_FILE``, some 150 authorities) costs about
25 ms of CPU, where a test makes a client for nearly every request it sends (``httpx.post``).
An empty directory (``SSL_CERT_DIR``) costs nothing to read.

:func:`trust_no_authority` (conftest.py, at import) sets it for this process and, through the
environment, every process it starts; the installers the tests run (pip, for the peers' venvs)
get the user's own settings back from :func:`installer_environment`, since their package index
may be reached through a proxy whose authority only the user's trust store holds.
"""
from __future__ import annotations

import os

#: the variables that name a trust store to OpenSSL, and to httpx's default client
TRUST_VARS = ("SSL_CERT_FILE", "SSL_CERT_DIR")
#: the prefix of the variables that keep the user's own values of :data:`TRUST_VARS` during the run
USER_VALUE_PREFIX = "A2A_SOLVER_TESTS_USER_"


def trust_no_authority(run_dir: str) -> None:
    """Point the trust store at an empty directory under ``run_dir`` (the run's private
    state), keeping the user's own values for :func:`installer_environment`. Once per run:
    a process that inherits it (a pytest-xdist worker) keeps it."""
    empty = os.path.join(run_dir, "trusted-authorities")
    if os.environ.get("SSL_CERT_DIR") == empty and "SSL_CERT_FILE" not in os.environ:
        return
    for name in TRUST_VARS:
        user_value = os.environ.pop(name, None)
        if user_value is not None:
            os.environ[USER_VALUE_PREFIX + name] = user_value
    os.makedirs(empty, exist_ok=True)
    os.environ["SSL_CERT_DIR"] = empty


def installer_environment() -> dict[str, str]:
    """This process's environment with the user's own trust store back, for a program that
    installs from a package index."""
    environment = {name: value for name, value in os.environ.items() if name not in TRUST_VARS}
    for name in TRUST_VARS:
        user_value = os.environ.get(USER_VALUE_PREFIX + name)
        if user_value is not None:
            environment[name] = user_value
    return environment
