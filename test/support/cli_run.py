"""Run the ``ovos-a2a`` command line as a real subprocess, for test/cli/test_cli.py: forked
from a process that has its libraries imported already (support/preloaded.py), or, with
``Cli(..., fresh=True)``, started from scratch.

    cli = Cli(tmp_path / "state")                  # a private conversation store
    result = cli.run("send", url, "hello")         # -> Result(returncode, stdout, stderr)
    a, b = cli.run_all(["discover", url], ["discover", url, "--json"])   # side by side

Every command gets ``XDG_STATE_HOME`` pointed at the given directory (so the
conversation store is the test's own), ``NO_COLOR=1`` and a fixed terminal width;
``A2A_CLIENT_*`` and ``OVOS_A2A_*`` variables of the calling environment are dropped,
so only what a test sets reaches the command.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from support import preloaded

MODULE = "ovos_a2a_solver.cli"
COMMAND = [sys.executable, "-m", MODULE]
DROPPED_PREFIXES = ("A2A_CLIENT_", "OVOS_A2A_")
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True, repr=False)
class Result:
    """How one command ended."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        """The non-blank lines written to stderr."""
        return [line for line in self.stderr.splitlines() if line.strip()]

    @property
    def report(self) -> str:
        """The command and everything it printed, as an assertion message."""
        return (f"$ ovos-a2a {' '.join(self.argv)}\n-> exit {self.returncode}\n"
                f"--- stdout ---\n{self.stdout}--- stderr ---\n{self.stderr}")

    def __repr__(self) -> str:
        return self.report

    __str__ = __repr__


class Pending:
    """A command that was started and not yet collected. With ``stderr_file``, what it writes to
    stderr goes to that file as it is written (:meth:`stderr_so_far`: a test reads it while the
    command runs); with ``typed``, a test types its input as it goes (:meth:`type`)."""

    def __init__(self, argv: tuple[str, ...], env: dict[str, str], input: str | None,
                 stderr_file: str | os.PathLike | None = None, typed: bool = False, fresh: bool = False) -> None:
        self.argv = argv
        self.input = input
        self.stderr_file = Path(stderr_file) if stderr_file is not None else None
        with (open(self.stderr_file, "w") if self.stderr_file else open(os.devnull)) as err:
            self.proc = preloaded.start(MODULE, argv, env=env, text=True, fresh=fresh,
                                        stdin=subprocess.PIPE if input is not None or typed else subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=err if self.stderr_file else subprocess.PIPE)

    def type(self, text: str) -> None:
        """Type ``text`` at the command's standard input (started ``typed``)."""
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def stderr_so_far(self) -> str:
        """What the command wrote to stderr by now (with ``stderr_file``)."""
        return self.stderr_file.read_text() if self.stderr_file else ""

    def result(self, timeout: float = DEFAULT_TIMEOUT) -> Result:
        """Wait for the command; kill it and fail if it runs longer than ``timeout`` seconds."""
        try:
            out, err = self.proc.communicate(self.input, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"ovos-a2a {' '.join(self.argv)} did not end within {timeout:g} s\n"
                                 f"--- stdout ---\n{out}--- stderr ---\n{err or self.stderr_so_far()}") from None
        return Result(self.argv, self.proc.returncode, out, err if err is not None else self.stderr_so_far())

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Cli:
    """``ovos-a2a`` with a private state directory and a clean environment."""

    def __init__(self, state_home: str | os.PathLike, *, fresh: bool = False, **env: str) -> None:
        Path(state_home).mkdir(parents=True, exist_ok=True)
        self.fresh = fresh
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_PREFIXES)}
        self.env.update(XDG_STATE_HOME=str(state_home), NO_COLOR="1", COLUMNS="120", LINES="40")
        self.env.update(env)

    def with_env(self, **env: str) -> dict[str, str]:
        return {**self.env, **env}

    def start(self, *argv: str, input: str | None = None, env: dict[str, str] | None = None,
              stderr_file: str | os.PathLike | None = None, typed: bool = False) -> Pending:
        return Pending(tuple(argv), self.with_env(**(env or {})), input, stderr_file, typed, self.fresh)

    def run(self, *argv: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> Result:
        """Run one command to its end."""
        return self.start(*argv, input=input, env=env).result(timeout)

    def run_all(self, *commands: list[str], timeout: float = DEFAULT_TIMEOUT) -> list[Result]:
        """Run independent commands at the same time; their results in the same order."""
        pending: list[Pending] = []
        try:
            for argv in commands:
                pending.append(self.start(*argv))
            return [p.result(timeout) for p in pending]
        finally:
            for p in pending:
                p.kill()
