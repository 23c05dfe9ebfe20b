"""Start and stop test/support/a2a_agent.py as a subprocess, for tests and benchmarks.

    with AgentProcess() as agent:
        agent.agent('echo')      # -> 'http://127.0.0.1:PORT/echo'
        agent.stats()['messages']['echo']
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from pathlib import Path
from urllib.parse import quote

import httpx

from support.network import free_port  # noqa: F401  (benchmarks and tests import it from here too)


AGENT_SCRIPT = Path(__file__).resolve().parent / 'a2a_agent.py'
READY_TIMEOUT = 30.0
ADMIN_TIMEOUT = 5.0


class AgentProcess:
    """The scripted A2A test agent server, running in a child process.

    ``AgentProcess(*extra_args, port=0)`` runs ``python test/support/a2a_agent.py PORT *extra_args``
    and waits for its ready line. ``.url`` is the HTTP base URL, ``.grpc`` the
    gRPC ``host:port``.
    """

    def __init__(self, *extra_args: str, port: int = 0, ready_timeout: float = READY_TIMEOUT):
        self.args = [sys.executable, str(AGENT_SCRIPT), str(port), *extra_args]
        self._http: httpx.Client | None = None
        self._stderr = tempfile.NamedTemporaryFile(prefix='a2a_agent_', suffix='.log', delete=False)
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=self._stderr,
                                     stdin=subprocess.DEVNULL)
        try:
            ready = self._wait_ready(ready_timeout)
        except BaseException:
            self.stop()
            raise
        self.url: str = ready['url']
        self.grpc: str = ready['grpc']
        self._http = httpx.Client(base_url=f'{self.url}/_admin/', timeout=ADMIN_TIMEOUT)

    # -- lifecycle --------------------------------------------------------

    def _wait_ready(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        line = b''
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stdout, selectors.EVENT_READ)
            while not line.endswith(b'\n'):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f'test agent not ready after {timeout:.0f} s\n{self.stderr_text()}')
                if not selector.select(min(left, 0.2)):
                    if self.proc.poll() is not None:
                        break
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:  # EOF: the process ended
                    break
                line += chunk
        if not line.endswith(b'\n'):
            self.proc.wait(timeout=5)
            raise RuntimeError(f'test agent exited with {self.proc.returncode} before it was ready\n'
                               f'{self.stderr_text()}')
        return json.loads(line.decode().splitlines()[0])

    def stderr_text(self) -> str:
        """What the agent wrote to stderr so far ('' once stopped: the log is deleted)."""
        if self._stderr.closed:
            return ''
        self._stderr.flush()
        return Path(self._stderr.name).read_text(errors='replace')

    def stop(self) -> None:
        """SIGTERM, wait up to 5 s, then SIGKILL. Safe to call twice."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._http is not None:
            self._http.close()
        if self.proc.stdout and not self.proc.stdout.closed:
            self.proc.stdout.close()
        if not self._stderr.closed:
            self._stderr.close()
            _unlink_quietly(self._stderr.name)

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- addresses --------------------------------------------------------

    def agent(self, name: str) -> str:
        return f'{self.url}/{name}'

    # -- admin endpoints --------------------------------------------------

    def _admin(self, method: str, path: str):
        response = self._http.request(method, path)
        response.raise_for_status()
        return response.json()

    def stats(self) -> dict:
        return self._admin('GET', 'stats')

    def headers(self) -> list[dict]:
        return self._admin('GET', 'headers')

    def grpc_calls(self) -> list[dict]:
        """The calls of :meth:`headers` that came over gRPC."""
        return [h for h in self.headers() if h['method'] == 'GRPC']

    def clear_headers(self) -> None:
        self._admin('DELETE', 'headers')

    def forget(self) -> None:
        self._admin('POST', 'forget')

    def finish(self) -> None:
        self._admin('POST', 'finish')

    def expire(self) -> None:
        self._admin('POST', 'expire')

    def release(self, hold: str | None = None) -> None:
        """Let the gated agents go on; with ``hold``, end the work of the turns "hold:HOLD" instead."""
        self._admin('POST', 'release' if hold is None else f'release?hold={quote(hold)}')

    def held_work(self) -> "HeldWork":
        """A message whose turn works until the test lets it end (a new name: no other test's
        release ends it)."""
        return HeldWork(self, uuid.uuid4().hex[:12])

    def flaky(self, count: int, status: int = 503, retry_after: str | None = None, agent: str = "flaky") -> None:
        """Make the 'flaky' agent (or ``agent``) refuse its next ``count`` requests with HTTP ``status``."""
        query = f'flaky?count={count}&status={status}&agent={agent}' + \
            ('' if retry_after is None else f'&retry_after={retry_after}')
        self._admin('POST', query)

    def message_ids(self) -> dict:
        """{"processed": {agent: [messageId, ...]}, "refused": [messageIds the flaky agent refused]}"""
        return self._admin('GET', 'message-ids')

    def tokens(self) -> dict:
        """{"requests": [{"grant_type", "scope", "client"}, ...], "issued": [token, ...]} of the OAuth2 endpoint."""
        return self._admin('GET', 'tokens')

    def revoke_tokens(self) -> None:
        """Revoke every OAuth2 token issued so far: the agents answer 401 (gRPC: UNAUTHENTICATED) to them."""
        self._admin('POST', 'revoke')

    def huge_chunks(self) -> list[int]:
        """The chunks each turn of the ``huge`` agent sent so far, in order."""
        return self._admin('GET', 'huge')['chunks']

    def streams(self) -> list[dict]:
        """Each streamed reply so far: {"agent", "events" it sent (until the client closed it)}."""
        return self._admin('GET', 'streams')

    def calls(self) -> list[dict]:
        """Each call to the bent_wire agents (langgraph*, fasta2a*) so far: {"agent", "call"
        (its JSON-RPC method, or HTTP+JSON method and path)}."""
        return self._admin('GET', 'calls')

    def upgrade(self, name: str, variant: int | None = None) -> int:
        """Switch agent ``name``'s card and bindings in place; returns the variant now served."""
        query = f'upgrade?agent={name}' + ('' if variant is None else f'&variant={variant}')
        return self._admin('POST', query)['variant']


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


class HeldWork:
    """:attr:`text` ("hold:NAME") works, on the echo, ask and fasta2a agents, until :meth:`release`,
    which also ends at once a turn of it that comes later."""

    def __init__(self, agent: AgentProcess, name: str) -> None:
        self.agent, self.name = agent, name

    @property
    def text(self) -> str:
        return f"hold:{self.name}"

    def release(self) -> None:
        self.agent.release(self.name)
