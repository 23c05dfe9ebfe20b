"""Start and stop the bridge (``ovos-a2a serve``) as a real subprocess, for tests.

    with BridgeProcess("--heartbeat", "1") as bridge:
        bridge.url        # 'http://127.0.0.1:PORT/a2a'   (the A2A JSON-RPC endpoint)
        bridge.root       # 'http://127.0.0.1:PORT'
        bridge.calls()    # backend calls so far (only with call_log=...)

The process runs ``python -m ovos_a2a_solver.bridge --port PORT --backend BACKEND
--state-dir DIR *args`` (``port=None``: no ``--port``, so the environment or the default
decides), forked from a process that has its libraries imported already (support/preloaded.py)
unless ``fresh=True`` or a ``command_prefix`` runs before it. A state dir given by the caller is kept (so a bridge can be restarted on the same
store); otherwise a fresh temporary one is made and removed on stop.
``default_state_dir=True`` passes no ``--state-dir``: the bridge uses its default,
``$XDG_STATE_HOME/ovos_a2a_solver/bridge`` (private to the test run, see conftest.py).
``fd_limit=N`` starts it with at most N open files (``RLIMIT_NOFILE``, soft and hard).
A ``--db URL`` among the arguments reaches the bridge as an operator should give it, as
``OVOS_A2A_DB`` in its environment: on its command line the URL's password would be shown
to every user (and the bridge warns of it).
``limit_file_size(N)`` lets the running process write no byte of any file past offset N
(``RLIMIT_FSIZE``: its writes fail as on a full disk; ``None`` lifts it); start it with
``piped_output=True`` so that its own output still reaches the logs (through pipes).
``command_prefix`` goes before the command, e.g. ``["ip", "netns", "exec", NAME]`` (a program
that ends by executing the rest, so that the process signalled is the bridge itself).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Mapping, Optional, Sequence

from support import preloaded

#: the banner's line of a bridge with ``--workers``
WORKERS_LINE = re.compile(r"^  (\d+) workers, process ids ([\d ]+)$", re.M)

READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0

#: ``ovos-a2a: serving "NAME" at URL (card CARD_URL)``
READY_LINE = re.compile(r'^ovos-a2a: serving "(?P<name>.*)" at (?P<url>\S+) \(card (?P<card>\S+)\)\s*$', re.M)


class BridgeStartError(RuntimeError):
    """The bridge exited (or hung) before it printed its ready line."""

    def __init__(self, message: str, returncode: Optional[int], stderr: str) -> None:
        super().__init__(f"{message}\n--- bridge stderr ---\n{stderr}")
        self.returncode = returncode
        self.stderr = stderr


class BridgeUnderTest:
    """What a test knows of a bridge, however it is served (:class:`BridgeProcess`, or
    ``support.bridge_in_process.InProcessBridge``): where it answers (``url``, ``root``,
    ``card_url``, ``port``), the name of the persona it serves, its state directory (a fresh
    temporary one unless ``state_dir`` is given, or none with ``default_state_dir``: the
    bridge's default) and the echo backend's call log; a context manager that stops it."""

    def __init__(self, state_dir: Optional[os.PathLike | str], default_state_dir: bool,
                 call_log: Optional[os.PathLike | str]) -> None:
        if default_state_dir and state_dir is not None:
            raise ValueError("give state_dir or default_state_dir=True, not both")
        self._own_state = state_dir is None and not default_state_dir
        self.state_dir: Optional[Path] = (None if default_state_dir else
                                          Path(tempfile.mkdtemp(prefix="ovos_a2a_bridge_")) if state_dir is None
                                          else Path(state_dir))
        self.call_log = Path(call_log) if call_log is not None else None
        self.name: str = ""
        self.url: str = ""
        self.card_url: str = ""
        self.root: str = ""
        self.port: int = 0

    def _serving_at(self, name: str, url: str, card_url: str, port: Optional[int] = None) -> None:
        """It serves the persona ``name`` at ``url`` (its root and port read from it, unless ``port`` is given)."""
        self.name, self.url, self.card_url = name, url.rstrip("/"), card_url
        scheme, rest = self.url.split("://", 1)
        self.root = f"{scheme}://{rest.split('/', 1)[0]}"
        self.port = port if port is not None else int(self.root.rsplit(":", 1)[1])

    def _forget_state(self) -> None:
        """Remove the state directory made for it (one given is kept)."""
        if self._own_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def calls(self, text: Optional[str] = None) -> int:
        """How many times the echo backend was called (for ``text`` only, if given); needs ``call_log=``."""
        if self.call_log is None:
            raise RuntimeError(f"{type(self).__name__} was started without call_log=")
        return echo_calls(self.call_log, text)


class BridgeProcess(BridgeUnderTest):
    """One bridge process; a context manager. ``stop()`` and ``kill9()`` are idempotent."""

    def __init__(self, *args: str, state_dir: Optional[os.PathLike | str] = None,
                 env: Optional[Mapping[str, str]] = None, backend: str = "echo", port: Optional[int] = 0,
                 call_log: Optional[os.PathLike | str] = None, ready_timeout: float = READY_TIMEOUT,
                 default_state_dir: bool = False, fd_limit: Optional[int] = None,
                 command_prefix: Sequence[str] = (), piped_output: bool = False, fresh: bool = False) -> None:
        super().__init__(state_dir, default_state_dir, call_log)
        state_args = [] if self.state_dir is None else ["--state-dir", str(self.state_dir)]
        port_flag = ["--port", str(port)] if port is not None else []
        db_env, args = db_in_environment(args)
        argv = [*port_flag, "--backend", backend, *state_args, *args]
        self.args = [*command_prefix, sys.executable, "-m", "ovos_a2a_solver.bridge", *argv]
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env.update(db_env)
        if self.call_log is not None:
            full_env["OVOS_A2A_ECHO_LOG"] = str(self.call_log)
        self._logs = Path(tempfile.mkdtemp(prefix="ovos_a2a_bridge_logs_"))
        self._stdout_path = self._logs / "stdout.log"
        self._stderr_path = self._logs / "stderr.log"
        self._final_stderr: Optional[str] = None
        self._copiers: list[threading.Thread] = []
        with open(self._stdout_path, "wb") as out, open(self._stderr_path, "wb") as err:
            outputs = (subprocess.PIPE, subprocess.PIPE) if piped_output else (out, err)
            if command_prefix:  # a program that ends by executing the bridge: a plain process
                self.proc = subprocess.Popen(self.args, stdout=outputs[0], stderr=outputs[1],
                                             stdin=subprocess.DEVNULL, env=full_env)
            else:
                self.proc = preloaded.start("ovos_a2a_solver.bridge", argv, env=full_env, stdout=outputs[0],
                                            stderr=outputs[1], open_files=fd_limit, fresh=fresh)
        if piped_output:
            for pipe, path in ((self.proc.stdout, self._stdout_path), (self.proc.stderr, self._stderr_path)):
                copier = threading.Thread(target=_copy_out, args=(pipe, path), daemon=True)
                copier.start()
                self._copiers.append(copier)
        try:
            self._wait_ready(ready_timeout)
        except BaseException:
            self.stop()
            raise

    # -- lifecycle --------------------------------------------------------

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            match = READY_LINE.search(self._stdout_path.read_text(errors="replace"))
            if match:
                break
            if self.proc.poll() is not None:
                # the ready line may have been written just before the exit
                match = READY_LINE.search(self._stdout_path.read_text(errors="replace"))
                if match:
                    break
                raise BridgeStartError(f"the bridge exited with {self.proc.returncode} before it was ready",
                                       self.proc.returncode, self.stderr_text())
            if time.monotonic() > deadline:
                raise BridgeStartError(f"the bridge was not ready after {timeout:.0f} s", None, self.stderr_text())
            time.sleep(0.05)
        self._serving_at(match.group("name"), match.group("url"), match.group("card"))

    def stdout_text(self) -> str:
        return self._stdout_path.read_text(errors="replace") if self._stdout_path.exists() else ""

    def worker_ids(self) -> list[int]:
        """The process ids of a bridge with ``--workers``, worker 1 first (from its banner)."""
        match = WORKERS_LINE.search(self.stdout_text())
        assert match, self.stdout_text()
        pids = [int(pid) for pid in match.group(2).split()]
        assert len(pids) == int(match.group(1))
        return pids

    def stderr_text(self) -> str:
        """Everything the bridge wrote to stderr so far (kept after stop)."""
        if self._final_stderr is not None:
            return self._final_stderr
        return self._stderr_path.read_text(errors="replace") if self._stderr_path.exists() else ""

    @property
    def returncode(self) -> Optional[int]:
        return self.proc.poll()

    def stop(self) -> None:
        """SIGTERM, wait up to 10 s, then SIGKILL."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._cleanup()

    def kill9(self) -> None:
        """SIGKILL at once (a crash), and wait."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self._cleanup()

    def limit_file_size(self, size: Optional[int]) -> None:
        """Let the process write nothing of any file past ``size`` bytes from its start
        (``RLIMIT_FSIZE``, its soft limit; ``None``: no limit again). SQLite then fails its
        writes ("disk I/O error"), as on a disk that cannot take more."""
        import resource

        _soft, hard = resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (hard if size is None else size, hard))

    def _cleanup(self) -> None:
        for copier in self._copiers:
            copier.join(timeout=5)
        if self._final_stderr is None:
            self._final_stderr = (self._stderr_path.read_text(errors="replace")
                                  if self._stderr_path.exists() else "")
            shutil.rmtree(self._logs, ignore_errors=True)
            self._forget_state()


def echo_calls(call_log: os.PathLike | str, text: Optional[str] = None) -> int:
    """The echo backend calls in ``call_log`` (for ``text`` only, if given), which several
    bridge processes may share."""
    path = Path(call_log)
    if not path.exists():
        return 0
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return len(lines) if text is None else sum(json.loads(line)["text"] == text for line in lines)


def worker_sockets(bridge: BridgeProcess) -> list[str]:
    """The names of the worker sockets (abstract namespace, without the leading NUL) that the
    workers of ``bridge`` hold open, from /proc."""
    held = set()
    for pid in bridge.worker_ids():
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except FileNotFoundError:  # closed meanwhile
                pass
    with open("/proc/net/unix") as table:
        rows = [line.split() for line in table]
    return sorted({row[-1][1:] for row in rows[1:]
                   if row[-1].startswith("@ovos-a2a-bridge/") and f"socket:[{row[6]}]" in held})


def _copy_out(pipe, path: Path) -> None:
    """Copy what comes through ``pipe`` into the file ``path`` as it comes, until it closes."""
    with pipe, open(path, "ab") as log:
        for chunk in iter(lambda: pipe.read1(65536), b""):
            log.write(chunk)
            log.flush()


def db_in_environment(args) -> tuple[dict[str, str], list[str]]:
    """``({"OVOS_A2A_DB": URL}, the other arguments)`` for arguments with ``--db URL``, else
    ``({}, the arguments)``."""
    args = list(args)
    if "--db" not in args:
        return {}, args
    at = args.index("--db")
    return {"OVOS_A2A_DB": args[at + 1]}, args[:at] + args[at + 2:]


def echo_log(tmp_path: os.PathLike | str) -> Path:
    """A fresh path for the echo backend's call log under ``tmp_path``."""
    path = Path(tmp_path) / "echo-calls.jsonl"
    if path.exists():
        path.unlink()
    return path
