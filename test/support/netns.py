# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Network namespaces of a test's own: each a machine of its own, linked to this one by a cable.

    with Machines("a", "b") as machines:
        machines.host_address("a")   # this machine's end of a's cable, e.g. '10.231.17.1'
        machines.address("a")        # a's end, e.g. '10.231.17.2'
        machines.run_in("a")         # ['ip', 'netns', 'exec', NAME]: put it before a command
        machines.cut("a", 5432)      # a and this machine no longer exchange a packet of TCP port 5432
        machines.heal("a")

Each machine is a network namespace with a veth pair to the root namespace, addressed in a
/30 of ``10.231.N.0/24`` (N chosen so that no interface here has an address in it). These
addresses exist only on the test's own interfaces, which are removed when the ``with`` block
ends, whatever happened in it. Making them needs root (``CAP_NET_ADMIN``), ``ip`` and ``tc``.

:meth:`Machines.cut` is a silent partition: packets to and from the port are dropped on both
ends of the cable (no reset, no ICMP; the peers only stop hearing from each other), and every
other packet passes. It is made of the queueing disciplines that kernels without the ``tc``
action modules have too: an ``htb`` root whose unclassified packets go straight out, and a
class holding a ``pfifo`` of length 0, into which a ``u32`` filter sends the port's packets.
"""
from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import uuid
from typing import Sequence

SUBNET_PREFIX = "10.231"
DROPPED_CLASS = "1:2"


def can_make_machines() -> str:
    """Why this process cannot make network namespaces ('' when it can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} (iproute2) not installed" if missing else ""


def _run(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited with {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def _free_subnet() -> int:
    """N such that no interface of this machine has an address in ``10.231.N.0/24``."""
    used = _run("ip", "-o", "-4", "addr", "show")
    for _ in range(100):
        third = uuid.uuid4().int % 256
        if f" {SUBNET_PREFIX}.{third}." not in used:
            return third
    raise RuntimeError(f"no free /24 in {SUBNET_PREFIX}.0.0/16")


class Machines:
    """Network namespaces, one per name, each linked to the root namespace; a context manager."""

    def __init__(self, *names: str) -> None:
        self.names: Sequence[str] = names
        tag = uuid.uuid4().hex[:6]
        self.namespaces = {name: f"ovosa2a-{tag}-{name}" for name in names}
        self._host_ends = {name: f"oa{tag}{n}h" for n, name in enumerate(names)}
        self._far_ends = {name: f"oa{tag}{n}m" for n, name in enumerate(names)}
        self._addresses: dict[str, tuple[str, str]] = {}
        self._cut: set[str] = set()

    def __enter__(self) -> "Machines":
        try:
            third = _free_subnet()
            for n, name in enumerate(self.names):
                network = ipaddress.ip_network(f"{SUBNET_PREFIX}.{third}.{4 * n}/30")
                host, far = (str(address) for address in network.hosts())
                self._addresses[name] = (host, far)
                namespace, host_end, far_end = self.namespaces[name], self._host_ends[name], self._far_ends[name]
                _run("ip", "netns", "add", namespace)
                _run("ip", "link", "add", host_end, "type", "veth", "peer", "name", far_end)
                _run("ip", "link", "set", far_end, "netns", namespace)
                _run("ip", "addr", "add", f"{host}/30", "dev", host_end)
                _run("ip", "link", "set", host_end, "up")
                for command in (("addr", "add", f"{far}/30", "dev", far_end), ("link", "set", far_end, "up"),
                                ("link", "set", "lo", "up")):
                    _run(*self.run_in(name), "ip", *command)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def close(self) -> None:
        """Remove the namespaces and their cables (idempotent)."""
        for name in self.names:
            subprocess.run(["ip", "netns", "del", self.namespaces[name]], capture_output=True, timeout=30)
            subprocess.run(["ip", "link", "del", self._host_ends[name]], capture_output=True, timeout=30)

    # -- addresses and commands ---------------------------------------------------

    def host_address(self, name: str) -> str:
        """The root namespace's address on ``name``'s cable (what ``name`` reaches this machine at)."""
        return self._addresses[name][0]

    def address(self, name: str) -> str:
        """``name``'s address on its cable (what this machine reaches it at)."""
        return self._addresses[name][1]

    def run_in(self, name: str) -> list[str]:
        """The command prefix that runs a program in ``name``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[name]]

    # -- the silent partition ---------------------------------------------------------

    def cut(self, name: str, port: int) -> None:
        """Drop every packet of TCP ``port`` between ``name`` and this machine, both ways: the
        packets ``name`` sends to the port, and those the port's side sends back."""
        for prefix, device, match in (([], self._host_ends[name], "sport"),
                                      (self.run_in(name), self._far_ends[name], "dport")):
            _run(*prefix, "tc", "qdisc", "add", "dev", device, "root", "handle", "1:", "htb")
            _run(*prefix, "tc", "class", "add", "dev", device, "parent", "1:", "classid", DROPPED_CLASS,
                 "htb", "rate", "1gbit")
            _run(*prefix, "tc", "qdisc", "add", "dev", device, "parent", DROPPED_CLASS, "pfifo", "limit", "0")
            _run(*prefix, "tc", "filter", "add", "dev", device, "parent", "1:", "protocol", "ip", "prio", "1",
                 "u32", "match", "ip", match, str(port), "0xffff", "flowid", DROPPED_CLASS)
        self._cut.add(name)

    def heal(self, name: str) -> None:
        """Undo :meth:`cut`: every packet passes again."""
        for prefix, device in (([], self._host_ends[name]), (self.run_in(name), self._far_ends[name])):
            _run(*prefix, "tc", "qdisc", "del", "dev", device, "root")
        self._cut.discard(name)

    def connects(self, name: str, port: int, timeout: float = 1.5) -> str:
        """What a TCP connect from ``name`` to this machine's ``port`` gives within ``timeout``:
        'connected', 'refused' or 'timed out'."""
        probe = ("import socket, sys\n"
                 "try:\n"
                 f"    socket.create_connection(({self.host_address(name)!r}, {port}), timeout={timeout}).close()\n"
                 "    print('connected')\n"
                 "except ConnectionRefusedError:\n"
                 "    print('refused')\n"
                 "except (TimeoutError, OSError) as exc:\n"
                 "    print('timed out' if isinstance(exc, TimeoutError) else f'error: {exc}')\n")
        import sys

        return _run(*self.run_in(name), sys.executable, "-c", probe).strip()
