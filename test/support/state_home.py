# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The run's private state directory: no test may write to the user's own state.

:func:`isolate_user_state` (called by conftest.py at import, before any fixture or test runs)
points ``XDG_STATE_HOME`` at a private temporary directory for this process and, through the
environment, every process it starts (the plugin's default conversation store and the bridge's
default state dir both live under it). The user's real state directory is kept in
:data:`USER_STATE_HOME_VAR` for test/package/test_state_isolation.py to check. ``HOME`` is left
alone: the code's ``~/.local/state`` fallback applies only when ``XDG_STATE_HOME`` is unset, and
build caches under ``~/.cache`` (the peer venvs of support/interop.py) stay where they are, so
they are not rebuilt every run.
"""
import atexit
import os
import shutil
import tempfile

#: the environment variable that keeps the user's own XDG state directory during the run
USER_STATE_HOME_VAR = "A2A_SOLVER_TESTS_USER_STATE_HOME"
#: the environment variable that names the run's private state directory
PRIVATE_STATE_HOME_VAR = "A2A_SOLVER_TESTS_PRIVATE_STATE_HOME"
#: the environment variable that names the directory of the whole run (its workers' directories are in it)
RUN_STATE_HOME_VAR = "A2A_SOLVER_TESTS_RUN_STATE_HOME"
#: the environment variable that names the pytest-xdist worker the private directory is for ("": no worker)
PRIVATE_STATE_OWNER_VAR = "A2A_SOLVER_TESTS_PRIVATE_STATE_OWNER"


def isolate_user_state() -> None:
    """Point XDG_STATE_HOME at a private temporary directory, once per test process.

    An outer test run may have done it already: a pytest-xdist worker inherits the
    directory of the run that started it, and takes a directory of its own inside it (so two
    workers never share a default conversation store or a bridge's default state dir; the
    outer run removes the whole tree at its end). Any other process that inherits an
    isolated environment keeps it as it is.
    """
    private = os.environ.get(PRIVATE_STATE_HOME_VAR)
    inherited = bool(private and os.environ.get("XDG_STATE_HOME") == private and USER_STATE_HOME_VAR in os.environ)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if inherited and os.environ.get(PRIVATE_STATE_OWNER_VAR, "") == worker:
        return
    if inherited:  # a worker of the outer run: a directory of its own, inside the run's
        os.environ.setdefault(RUN_STATE_HOME_VAR, private)
        private = tempfile.mkdtemp(prefix=f"{worker}_", dir=private)
    else:
        os.environ[USER_STATE_HOME_VAR] = (os.environ.get("XDG_STATE_HOME")
                                           or os.path.join(os.path.expanduser("~"), ".local", "state"))
        private = tempfile.mkdtemp(prefix="ovos_a2a_tests_state_")
        os.environ[RUN_STATE_HOME_VAR] = private
        atexit.register(shutil.rmtree, private, ignore_errors=True)
    os.environ[PRIVATE_STATE_HOME_VAR] = os.environ["XDG_STATE_HOME"] = private
    os.environ[PRIVATE_STATE_OWNER_VAR] = worker
    for name in ("OVOS_A2A_STATE_DIR", "OVOS_A2A_DB"):  # a bridge's own settings would point elsewhere
        os.environ.pop(name, None)
