# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""A PostgreSQL server of a test's own, which the test may stop, start and restart.

    with PostgresServer(listen=("127.0.0.1",)) as server:
        server.url("127.0.0.1")     # 'postgresql+asyncpg://ovos_a2a:PASSWORD@127.0.0.1:PORT/ovos_a2a'
        server.restart(mode="fast")  # what ``pg_ctlcluster VERSION NAME restart -m fast`` does
        server.stop(); server.start()

``initdb`` and ``pg_ctl`` of the installed server (:func:`postgres_bin`) make a cluster in a
temporary directory, on a free port, listening on the addresses given (they must exist when
it starts) and accepting password logins from them and from the ``clients`` networks only. PostgreSQL refuses to run as root:
as root the cluster's directory is given to the ``postgres`` user and every command runs as
that user (``setpriv``). The server is stopped (immediately) and its directory removed when
the ``with`` block ends, whatever happened in it.
"""
from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from support.network import free_port

#: where Debian and Ubuntu install the server's programs (newest version first)
POSTGRES_LIBS = Path("/usr/lib/postgresql")
#: the user the server runs as when the test runs as root
SERVER_USER = "postgres"
#: the server's programs a test runs
PROGRAMS = ("initdb", "pg_ctl", "createdb")
START_TIMEOUT = 60


def postgres_bin() -> Optional[Path]:
    """The directory holding :data:`PROGRAMS` (of the newest version installed), or None."""
    versions = sorted((p for p in POSTGRES_LIBS.glob("*/bin") if all((p / name).exists() for name in PROGRAMS)),
                      key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if versions:
        return versions[-1]
    found = shutil.which("initdb")  # elsewhere: the directory of initdb, if it has the others too
    resolved = Path(found).resolve().parent if found else None
    return resolved if resolved and all((resolved / name).exists() for name in PROGRAMS) else None


class PostgresServer:
    """One PostgreSQL cluster of the test's own; a context manager (it starts at ``__enter__``)."""

    user = "ovos_a2a"
    database = "ovos_a2a"

    def __init__(self, listen: Sequence[str] = ("127.0.0.1",), clients: Sequence[str] = (),
                 port: Optional[int] = None) -> None:
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError("no PostgreSQL server programs (initdb, pg_ctl) are installed")
        self.listen = tuple(listen)
        self.clients = tuple(f"{address}/32" for address in listen) + tuple(clients)
        self.port = port or free_port()
        self.password = secrets.token_hex(12)
        self.dir = Path(tempfile.mkdtemp(prefix="ovos_a2a_pg_"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self._run_as = (["setpriv", "--reuid", SERVER_USER, "--regid", SERVER_USER, "--init-groups"]
                        if os.geteuid() == 0 else [])

    # -- lifecycle --------------------------------------------------------

    def __enter__(self) -> "PostgresServer":
        try:
            self._init()
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def _init(self) -> None:
        if self._run_as:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        password_file = self.dir / "password"
        password_file.write_text(self.password + "\n")
        if self._run_as:
            os.chown(password_file, pwd.getpwnam(SERVER_USER).pw_uid, -1)
        self._command("initdb", "-D", str(self.data), "-U", self.user, "--pwfile", str(password_file),
                      "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync")
        password_file.unlink()
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write(f"\nlisten_addresses = '{','.join(self.listen)}'\nport = {self.port}\n"
                       f"unix_socket_directories = '{self.dir}'\nfsync = off\nmax_connections = 200\n")
        with open(self.data / "pg_hba.conf", "w") as hba:  # password logins from the given addresses only
            hba.write("local all all trust\n")
            for network in self.clients:
                hba.write(f"host all all {network} scram-sha-256\n")
        self._started = False

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._command("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(START_TIMEOUT), "start")
        self._started = True
        if not getattr(self, "_created", False):
            self._command("createdb", "-h", str(self.dir), "-p", str(self.port), "-U", self.user, self.database)
            self._created = True

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``mode``: smart, fast or immediate, as ``pg_ctl stop -m``)."""
        self._command("pg_ctl", "-D", str(self.data), "-w", "-t", str(START_TIMEOUT), "-m", mode, "stop")
        self._started = False

    def restart(self, mode: str = "fast") -> None:
        """Stop the server (``mode`` as for :meth:`stop`) and start it again."""
        self._command("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(START_TIMEOUT),
                      "-m", mode, "restart")
        self._started = True

    def close(self) -> None:
        """Stop the server at once if it runs, and remove its directory."""
        if getattr(self, "_started", False) or (self.data / "postmaster.pid").exists():
            subprocess.run([*self._run_as, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                            "-w", "stop"], capture_output=True, timeout=START_TIMEOUT)
            self._started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- addresses ----------------------------------------------------------

    def url(self, host: Optional[str] = None) -> str:
        """The database's URL (SQLAlchemy form, the bridge's ``--db``) through ``host`` (default:
        the first address it listens on)."""
        return (f"postgresql+asyncpg://{self.user}:{self.password}@{host or self.listen[0]}:{self.port}/"
                f"{self.database}")

    def log_tail(self, lines: int = 30) -> str:
        """The end of the server's log."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def _command(self, program: str, *args: str) -> None:
        done = subprocess.run([*self._run_as, str(self.bin / program), *args], capture_output=True, text=True,
                              timeout=START_TIMEOUT + 10, cwd=self.dir)
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} exited with {done.returncode}:\n{done.stdout}\n"
                               f"{done.stderr}\n--- server log ---\n{self.log_tail()}")
