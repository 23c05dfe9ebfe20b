# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Telling a service manager where the bridge stands: systemd's notification protocol
(``Type=notify``), spoken only when systemd started the process (``NOTIFY_SOCKET`` is set).

``READY=1`` once the port accepts (with ``--workers``, once every worker does), so that units
ordered after the bridge start when it really serves; ``STOPPING=1`` when a signal begins the
graceful stop. One datagram each, on a Unix socket: nothing to install for it.
"""
from __future__ import annotations

import logging
import os
import socket

LOG = logging.getLogger("ovos_a2a_solver.bridge")

NOTIFY_SOCKET = "NOTIFY_SOCKET"


def notify(state: str) -> bool:
    """Send ``state`` (``"READY=1"``, ``"STOPPING=1"``, ``"STATUS=…"``, newline separated) to
    the service manager, if one listens; whether it was sent. Never raises."""
    address = os.environ.get(NOTIFY_SOCKET)
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as exc:
        LOG.warning("could not tell the service manager %r: %s", state.splitlines()[0], exc)
        return False
    return True


def forget_service_manager() -> None:
    """For a worker process: only the process systemd started speaks to it."""
    os.environ.pop(NOTIFY_SOCKET, None)
