# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Workers of one bridge on one SQLite file (``--workers N``): what one asks another.

The workers share the listening socket, so any of them may receive a request about a
task another one is working on. The task itself is in the shared SQLite file, and so is
the operation that says which run (boot id) works on it (see ``operations``). Two
requests need the run itself:

* **cancel**: only the run holding the persona turn can stop it honestly (see
  ``handler``); it answers with ``None`` once stopped, or the reason it could not;
* **subscribe**: the live events exist only in that run's memory; it relays them.

Each run listens on a Unix socket of its own in Linux's abstract namespace, named after
its boot id (nothing on disk to clean up after a ``kill -9``). A request is one JSON line;
a cancel gets one line back, a subscription a line per event (the ``StreamResponse`` in
protobuf bytes, base64) and a last line saying how it ended. This is a direct request to
one process: nothing is queued, and a run that is gone refuses the connection at once.

Abstract names have no owner and no permissions: any local process may connect to one,
and any may take a name nobody holds (the name of a worker that died, until it is started
again and fails the dead run's work). So both ends check the other (``SO_PEERCRED``, which
names the process that listens or connects): it must run as this process's user and be a
child of this process's parent, that is, a worker of this bridge. A process that is not is
hung up on: asked, it answers nothing; asking, it is taken for a worker that is gone.
"""
from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import socket
import struct
import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass

from a2a.types import StreamResponse
from a2a.utils import errors as a2a_errors
from a2a.utils.proto_utils import to_stream_response

from ovos_a2a_solver.bridge.cluster.peers import LocalTurns, PeerUnreachable
from ovos_a2a_solver.bridge.observe.log_safety import Throttle
from ovos_a2a_solver.bridge.storage.operations import Operation, OperationLog

LOG = logging.getLogger("ovos_a2a_solver.bridge")
#: any local user may connect to a worker's socket in a loop: one line per kind of refusal per 10 s
REFUSALS = Throttle()

NAMESPACE = "ovos-a2a-bridge"  # abstract socket names: "\0ovos-a2a-bridge/<boot>"
LINE_LIMIT = 64 * 1024 * 1024  # one relayed event (a whole task) may be large

#: the A2A errors a relay may end with, by their JSON-RPC code (the a2a-sdk's own mapping)
ERRORS_BY_CODE = {code: cls for cls, code in a2a_errors.JSON_RPC_ERROR_CODE_MAP.items()}


class Ask(enum.Enum):
    """What one worker asks the worker doing a task (the ``kind`` of a request line)."""

    CANCEL = "cancel"   # stop its turn: one line back, the refusal or null
    FOLLOW = "follow"   # relay its live events: a line per event, then one that says how it ended


@dataclass(frozen=True)
class Request:
    """One worker's request about a task, as one JSON line."""

    ask: Ask
    task_id: str
    owner: str

    def line(self) -> bytes:
        return _line({"kind": self.ask.value, "task": self.task_id, "owner": self.owner})

    @classmethod
    def read(cls, line: bytes) -> "Request":
        """The request in ``line``; ``ValueError`` for anything else."""
        note = json.loads(line or b"{}")
        try:
            return cls(Ask(note["kind"]), str(note["task"]), str(note["owner"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a worker's request: {exc!r}") from None


@dataclass(frozen=True)
class RelayEnd:
    """How a relayed subscription ended: settled (no error), or with an A2A error."""

    code: int | None = None
    message: str = ""

    def line(self) -> bytes:
        return _line({"end": True} if self.code is None else {"error": self.code, "message": self.message})

    def error(self) -> Exception | None:
        """The A2A error it ended with, as the SDK's own class (by its code), or ``None``."""
        if self.code is None:
            return None
        return ERRORS_BY_CODE.get(self.code, a2a_errors.InternalError)(message=self.message)

    @classmethod
    def of(cls, exc: a2a_errors.A2AError) -> "RelayEnd":
        code = a2a_errors.JSON_RPC_ERROR_CODE_MAP.get(type(exc), a2a_errors.JSON_RPC_ERROR_CODE_MAP[
            a2a_errors.InternalError])
        return cls(code, exc.message or "")


class NotASibling(ConnectionError):
    """The process at the other end of a worker's socket is not a worker of this bridge."""


def address(boot: str) -> str:
    """The abstract Unix socket name of the run ``boot``."""
    return f"\0{NAMESPACE}/{boot}"


def _unwrap(response: StreamResponse):
    return getattr(response, response.WhichOneof("payload"))


def _line(note: dict) -> bytes:
    return json.dumps(note, separators=(",", ":")).encode() + b"\n"


class Siblings:
    """This worker's end: it answers its siblings' requests and makes its own."""

    relays_streams = True  # a subscription to a sibling's task is relayed here (see ``handler``)
    keeps_parked_tasks = False  # a follow-up may reach a sibling, which writes what this one would not see
    gives_up_turns = False  # siblings share one file and no lease

    def __init__(self, operations: OperationLog) -> None:
        self.operations = operations
        self._server: asyncio.AbstractServer | None = None
        self._here: LocalTurns | None = None
        self._connections: set[asyncio.Task] = set()

    @property
    def boot(self) -> str:
        return self.operations.boot

    async def start(self, here: LocalTurns) -> None:
        """Listen for the siblings' requests."""
        self._here = here
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(address(self.boot))
            sock.listen(64)
            sock.setblocking(False)
            self._server = await asyncio.start_unix_server(self._serve, sock=sock, limit=LINE_LIMIT)
        except BaseException:
            sock.close()
            raise

    async def stop(self) -> None:
        """Stop listening; end the relays in progress."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for job in list(self._connections):
            job.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    # ---- answering -------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        job = asyncio.current_task()
        self._connections.add(job)
        try:
            refusal = _not_a_sibling(writer.get_extra_info("socket"))
            if refusal is not None:
                REFUSALS.warning(LOG, "asked", "hung up on a request on this worker's socket: %s", refusal)
                return
            request = Request.read(await reader.readline())
            if request.ask is Ask.CANCEL:
                try:
                    refusal = await self._here.cancel_here(request.task_id, request.owner)
                except Exception as exc:  # never leave the asking worker waiting for nothing
                    refusal = f"the worker on it failed to stop it: {type(exc).__name__}"
                writer.write(_line({"refusal": refusal}))
            else:
                await self._relay(request, writer)
            await writer.drain()
        except (ConnectionError, ValueError, asyncio.IncompleteReadError) as exc:
            LOG.debug("a sibling's request ended early: %r", exc)
        finally:
            self._connections.discard(job)
            writer.close()

    async def _relay(self, request: Request, writer: asyncio.StreamWriter) -> None:
        events = self._here.follow_here(request.task_id, request.owner)
        try:
            async for event in events:
                data = base64.b64encode(to_stream_response(event).SerializeToString()).decode()
                writer.write(_line({"event": data}))
                await writer.drain()
            writer.write(RelayEnd().line())
        except a2a_errors.A2AError as exc:
            writer.write(RelayEnd.of(exc).line())
        finally:
            await events.aclose()

    # ---- asking ----------------------------------------------------------------------------------

    async def ask_to_cancel(self, operation: Operation, timeout: float) -> str | None:
        """Ask the run doing ``operation`` to stop its task's turn; ``None`` once it stopped
        (and recorded ``canceled``), else the reason it could not. Raises
        :class:`PeerUnreachable` when it is gone or silent for ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await self._open(operation)
                try:
                    writer.write(Request(Ask.CANCEL, operation.task_id, operation.owner).line())
                    await writer.drain()
                    answer = json.loads(await reader.readline() or b"{}")
                finally:
                    writer.close()
        except (OSError, ValueError, asyncio.TimeoutError):
            raise PeerUnreachable(operation.replica) from None
        if "refusal" not in answer:
            raise PeerUnreachable(operation.replica)
        return answer["refusal"]

    async def follow(self, operation: Operation) -> AsyncIterator:
        """The live events of ``operation``'s task, relayed by the run doing it, until the
        task settles there (or its turn ended before the relay began: nothing). Raises the
        A2A error that run answered, or :class:`PeerUnreachable` when it is gone or goes away
        (its work is failed when it is started again)."""
        try:
            reader, writer = await self._open(operation)
        except OSError:
            raise PeerUnreachable(operation.replica) from None
        try:
            writer.write(Request(Ask.FOLLOW, operation.task_id, operation.owner).line())
            await writer.drain()
            while True:
                try:
                    line = await reader.readline()
                except OSError:
                    line = b""
                if not line:
                    raise PeerUnreachable(operation.replica)
                note = json.loads(line)
                if "event" in note:
                    yield _unwrap(StreamResponse.FromString(base64.b64decode(note["event"])))
                elif "error" in note:
                    raise RelayEnd(int(note["error"]), str(note.get("message", ""))).error()
                else:
                    return
        finally:
            writer.close()

    async def _open(self, operation: Operation):
        """A connection to the run doing ``operation``; raises :class:`NotASibling` (an
        ``OSError``, as for a run that is gone) when the name is held by another process."""
        reader, writer = await asyncio.open_unix_connection(address(operation.boot), limit=LINE_LIMIT)
        refusal = _not_a_sibling(writer.get_extra_info("socket"))
        if refusal is not None:
            writer.close()
            REFUSALS.warning(LOG, "asking", "did not ask the socket of worker %s: %s", operation.replica, refusal)
            raise NotASibling(refusal)
        return reader, writer


def _not_a_sibling(sock: socket.socket | None) -> str | None:
    """Why the peer of a Unix socket is not a worker of this bridge (it runs as another
    user, or is not a child of this process's parent), or ``None`` when it is one."""
    if sock is None:
        return "the connection has no socket"
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", credentials)
    if uid != os.getuid():
        return f"process {pid} runs as user {uid}, not {os.getuid()}"
    parent = _parent_of(pid)
    if parent != os.getppid():
        return f"process {pid} is not a worker of this bridge (its parent is {parent}, not {os.getppid()})"
    return None


def _parent_of(pid: int) -> int | None:
    """The parent process id of ``pid`` (Linux ``/proc``), or ``None`` once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # after "pid (command)": state, ppid, ...
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None
