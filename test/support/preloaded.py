"""The package's commands started as processes of their own, forked from a process that has
already imported the libraries they load (a fork server, one per test process).

A bridge process spends about 1.6 s of CPU on starting, most of it importing libraries (the
a2a-sdk's dependencies: SQLAlchemy, FastAPI, gRPC, protobuf, pydantic, httpx); a command of
the command line about 0.6 s. A suite that starts some 140 bridges and 170 commands spent a
third of its CPU there. :func:`start` forks each from a process that imported those once
(:data:`PRELOADED`: third-party libraries only, never this package or the a2a-sdk, which read
their environment at import), so each is still a process of its own, with its own process id,
arguments, environment, working directory, standard streams, signals and exit status, and
imports this package and the SDK itself, as ``python -m MODULE`` would. The preloaded objects
are frozen (``gc.freeze``), so that no process forked from there copies their memory by walking
them in a collection.

What such a process does not have of its own: ``/proc/PID/cmdline`` and ``/proc/PID/environ``
show the fork server's (a test of what a command line reveals starts a plain process,
``fresh=True``), and the hash seed is the fork server's. Where a request could not match a
fresh interpreter (a variable Python reads when it starts differs, e.g. ``PYTHONPATH`` or
``LANG``), :func:`start` starts a plain :class:`subprocess.Popen` instead, as it does without
``fork`` (not Linux).

    proc = start("ovos_a2a_solver.bridge", ["--port", "0"], env=env, stdout=out, stderr=err)
    proc.pid, proc.poll(), proc.wait(timeout=10), proc.send_signal(signal.SIGTERM)

The fork server itself is ``python -c`` running :func:`serve`, started at the first request
and ended with the test process (it reads its standard input until the end).
"""
from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, Mapping, Optional, Sequence

#: what the fork server imports before it forks anything
PRELOADED = (
    "asyncio", "sqlalchemy", "sqlalchemy.ext.asyncio", "sqlalchemy.orm", "aiosqlite", "asyncpg",
    "fastapi", "starlette.applications", "sse_starlette", "uvicorn", "httpx", "pydantic",
    "google.protobuf", "grpc", "grpc.aio", "culsans",
)
#: variables an interpreter reads when it starts: a request whose values differ gets a plain process
_STARTUP_VARIABLES = ("PYTHON", "LANG", "LC_")
_HEADER = 8  # bytes of a request's length


class PreloadedProcess:
    """A process the fork server started: what a test uses of :class:`subprocess.Popen`."""

    def __init__(self, args: list[str], pid: int, status: socket.socket,
                 stdin: Optional[IO], stdout: Optional[IO], stderr: Optional[IO]) -> None:
        self.args, self.pid = args, pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: Optional[int] = None
        self._status = status  # the fork server writes the exit status here, once it reaped the process
        self._lock = threading.Lock()

    def poll(self) -> Optional[int]:
        return self._collect(0)

    def wait(self, timeout: Optional[float] = None) -> int:
        if self._collect(timeout) is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input: Optional[str] = None, timeout: Optional[float] = None) -> tuple[Any, Any]:
        """Write ``input``, read both outputs to their end and wait, as :meth:`subprocess.Popen.communicate`
        (on :class:`subprocess.TimeoutExpired` the reading goes on: call it again for the rest)."""
        if not hasattr(self, "_readers"):
            self._read: dict[str, list] = {}
            self._readers = []
            for name in ("stdout", "stderr"):
                stream = getattr(self, name)
                if stream is not None:
                    self._read[name] = []
                    reader = threading.Thread(target=_read_all, args=(stream, self._read[name]), daemon=True)
                    reader.start()
                    self._readers.append(reader)
            if self.stdin is not None:
                try:
                    if input:
                        self.stdin.write(input)
                    self.stdin.close()
                except BrokenPipeError:
                    pass
        self.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        return tuple(_joined(self._read[name]) if name in self._read else None for name in ("stdout", "stderr"))

    def _collect(self, timeout: Optional[float]) -> Optional[int]:
        with self._lock:
            if self.returncode is None:
                readable, _, _ = select.select([self._status], [], [], timeout)
                if readable:
                    said = self._status.makefile("r").readline()
                    self._status.close()
                    # no line: the fork server ended first (its test process is ending); say killed
                    self.returncode = int(said) if said.strip() else -signal.SIGKILL
            return self.returncode

    def __del__(self) -> None:
        self._status.close()


def start(module: str, argv: Sequence[str], *, env: Mapping[str, str], stdin: Any = subprocess.DEVNULL,
          stdout: Any = None, stderr: Any = None, text: bool = False, cwd: Optional[str] = None,
          open_files: Optional[int] = None, fresh: bool = False):
    """``python -m module *argv`` with ``env``, forked from the fork server, or a plain
    :class:`subprocess.Popen` when ``fresh`` (or it could not match a fresh interpreter).
    ``stdin``/``stdout``/``stderr``: ``subprocess.PIPE``, ``subprocess.DEVNULL``, ``None``
    (this process's), or an open file. ``open_files``: the most files it may have open
    (``RLIMIT_NOFILE``, set before it runs)."""
    args = [sys.executable, "-m", module, *argv]
    env = dict(env)
    if fresh or not hasattr(os, "fork") or _startup_differs(env, _server().environment):
        return subprocess.Popen(args, env=env, stdin=stdin, stdout=stdout, stderr=stderr, text=text, cwd=cwd,
                                preexec_fn=None if open_files is None else lambda: _limit_open_files(open_files))
    child_ends, ours = [], []
    for number, spec in enumerate((stdin, stdout, stderr)):
        if spec == subprocess.PIPE:
            read, write = os.pipe()
            child, own = (read, write) if number == 0 else (write, read)
            child_ends.append(child)
            ours.append(open(own, "w" if number == 0 else "r", closefd=True) if text
                        else open(own, "wb" if number == 0 else "rb", buffering=0 if number == 0 else -1))
        elif spec == subprocess.DEVNULL:
            child_ends.append(os.open(os.devnull, os.O_RDWR))
            ours.append(None)
        elif spec is None:
            child_ends.append(os.dup(number))
            ours.append(None)
        else:
            child_ends.append(os.dup(spec if isinstance(spec, int) else spec.fileno()))
            ours.append(None)
    status = None
    try:
        request = json.dumps({"module": module, "argv": [module, *argv], "env": env,
                              "cwd": cwd or os.getcwd(), "open_files": open_files}).encode()
        status = _the_server.request(len(request).to_bytes(_HEADER, "big") + request, child_ends)
        pid = int(status.makefile("r").readline())  # empty (ValueError) when the server could not fork
    except BaseException:
        for own in (*ours, status):
            if own is not None:
                own.close()
        raise
    finally:
        for fd in child_ends:
            os.close(fd)
    return PreloadedProcess(args, pid, status, *ours)


def _startup_differs(env: Mapping[str, str], server_env: Mapping[str, str]) -> bool:
    names = {name for name in (*env, *server_env) if name.startswith(_STARTUP_VARIABLES)}
    return any(env.get(name) != server_env.get(name) for name in names)


def _limit_open_files(count: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


def _read_all(stream: IO, into: list) -> None:
    os.set_blocking(stream.fileno(), True)  # a test may have read some of it without blocking
    with stream:
        into.append(stream.read())


def _joined(parts: list) -> Any:
    return parts[0] if parts else ""


# -- the fork server, as the test process sees it ---------------------------------------------

class _ForkServer:
    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="ovos_a2a_fork_")
        self.path = os.path.join(self.directory, "socket")
        self.environment = dict(os.environ)
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import support.preloaded as preloaded; "
                "del sys.path[0]; preloaded.serve(sys.argv[2])")
        self.process = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent.parent), self.path],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.environment)
        if self.process.stdout.readline() != b"ready\n":
            raise RuntimeError(f"the fork server did not start (exit {self.process.wait()})")
        atexit.register(self.close)

    def request(self, data: bytes, fds: list[int]) -> socket.socket:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.path)
        socket.send_fds(connection, [data], fds)
        return connection

    def close(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:  # at exit: a stuck server must not keep the test run from ending
            self.process.kill()
            self.process.wait()
        for name in os.listdir(self.directory):
            os.unlink(os.path.join(self.directory, name))
        os.rmdir(self.directory)


_the_server: Optional[_ForkServer] = None
_starting = threading.Lock()


def _server() -> _ForkServer:
    global _the_server
    with _starting:
        if _the_server is None:
            _the_server = _ForkServer()
        return _the_server


# -- the fork server, in its own process -------------------------------------------------------

def serve(path: str) -> None:
    """Import :data:`PRELOADED`, then fork a process for each request on the Unix socket at
    ``path`` and tell the requester its process id, and later its exit status; end when the
    standard input ends. Single-threaded, so that no lock is held by another thread at a fork."""
    import gc
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    # the libraries' objects stay out of every collection of every process forked from here: a
    # collection that walked them would write to each page they lie on, copying it (copy on
    # write), which cost each forked process 0.35 s of CPU (a forked ``--help`` took 0.50 s,
    # three times a fresh one; 0.15 s with this)
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    waiting: dict[int, socket.socket] = {}  # process id -> its requester's connection
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [], 0.05)
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1):
            return  # the test process has ended
        if listener in readable:
            connection, _ = listener.accept()
            request, fds = _receive(connection)
            pid = os.fork()
            if pid == 0:
                _become(request, fds, [listener, connection, *waiting.values()])
                return  # (not reached: the process above ends as its command ends)
            for fd in fds:
                os.close(fd)
            _tell(connection, pid)
            waiting[pid] = connection
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            connection = waiting.pop(pid, None)
            if connection is not None:
                _tell(connection, os.waitstatus_to_exitcode(status))
                connection.close()


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 16, 3)
    while len(data) < _HEADER or len(data) < _HEADER + int.from_bytes(data[:_HEADER], "big"):
        more = connection.recv(1 << 16)
        if not more:
            raise ConnectionError("the request ended early")
        data += more
    return json.loads(data[_HEADER:]), fds


def _tell(connection: socket.socket, number: int) -> None:
    try:
        connection.sendall(f"{number}\n".encode())
    except OSError:
        pass  # the requester has gone


def _become(request: dict, fds: list[int], sockets: list[socket.socket]) -> None:
    """In the forked process: take the request's streams, environment, directory and
    arguments, and run its module as ``__main__``; the interpreter ends as ``python -m`` does."""
    import runpy

    for each in sockets:
        each.close()
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
        os.close(fd)
    os.chdir(request["cwd"])
    if request["open_files"] is not None:
        _limit_open_files(request["open_files"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
