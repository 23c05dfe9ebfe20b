"""A webhook receiver on loopback for push notification tests and benchmarks, and the ways
it may answer (at once, one byte every 5 s, endlessly)."""
from __future__ import annotations

import socketserver
import threading
import time


class Webhook:
    """A raw HTTP receiver on 127.0.0.1: ``answer(handler)`` writes the answer to each
    request after its body is read. Counts requests, bodies that name ``TASK_STATE_COMPLETED``
    (with when the first one for each task arrived) and the answer bytes sent."""

    def __init__(self, answer) -> None:
        self.requests = 0
        self.completed: dict[str, float] = {}
        self.completed_bodies = 0
        self.cut_off = 0  # answers the bridge hung up on before they ended
        self.sent = 0
        self.closing = threading.Event()
        self.lock = threading.Lock()
        webhook = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                length = 0
                while True:
                    line = self.rfile.readline(65537)
                    if not line or line in (b"\r\n", b"\n"):
                        break
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = self.rfile.read(length).decode()
                with webhook.lock:
                    webhook.requests += 1
                    if "TASK_STATE_COMPLETED" in body:
                        task_id = body.split('"taskId": "', 1)[-1].split('"', 1)[0]
                        webhook.completed.setdefault(task_id, time.monotonic())
                        webhook.completed_bodies += 1
                try:
                    answer(webhook, self.wfile)
                except OSError:  # the bridge hung up: what it should do with a bad answer
                    with webhook.lock:
                        webhook.cut_off += 1

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 512

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count_sent(self, n: int) -> None:
        with self.lock:
            self.sent += n

    def close(self) -> None:
        self.closing.set()  # ends the answers still being written
        self.server.shutdown()
        self.server.server_close()


def quick(webhook: Webhook, out) -> None:
    out.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def one_byte_every_5_s(webhook: Webhook, out) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n":
        out.write(bytes([byte]))
        out.flush()
        if webhook.closing.wait(5):
            return


def endless(webhook: Webhook, out) -> None:
    out.write(b"HTTP/1.1 200 OK\r\nContent-Length: 400000000\r\n\r\n")
    chunk = b"\0" * 65536
    while not webhook.closing.is_set():
        out.write(chunk)
        webhook.count_sent(len(chunk))
