"""One rule for which headers carry credentials: the bridge drops them from a request, and the
plugin's wire log (``ovos-a2a -v``) hides their values; both by the shared leaf module."""
import asyncio
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from ovos_a2a_solver.agent.wire_log import LoggedTransport
from ovos_a2a_solver.credential_headers import credential_header

CREDENTIALS = {"Authorization": "Bearer auth-Qx2", "Proxy-Authorization": "Basic proxy-Wm4", "Cookie": "c=cookie-Zt7",
               "X-API-Key": "apikey-Hb1", "X-Auth-Token": "token-Pn5", "X-Client-Secret": "secret-Lr8",
               "X-Password": "password-Kd3", "X-Session-Id": "session-Vf6"}
PLAIN = {"Content-Type": "text/plain", "A2A-Version": "1.0", "X-Tokenizer-Model": "plain-Jy9",
         "X-Request-Id": "request-Uc0"}


def test_the_rule_names_credentials_by_a_part_of_the_name():
    assert all(credential_header(name) for name in CREDENTIALS)
    assert all(credential_header(name.lower()) for name in CREDENTIALS)
    assert credential_header("Set-Cookie") and credential_header("api_key")
    assert not any(credential_header(name) for name in PLAIN)


class _Answer(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Set-Cookie", "s=set-cookie-Gw2")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_the_wire_log_hides_every_credential_header_the_bridge_drops(http_server, caplog):
    async def get():
        async with httpx.AsyncClient(transport=LoggedTransport(httpx.AsyncHTTPTransport())) as client:
            response = await client.get(http_server, headers={**CREDENTIALS, **PLAIN})
            return response.text

    with caplog.at_level(logging.DEBUG, logger="ovos_a2a_solver.wire"):
        assert asyncio.run(get()) == "ok"
    log = caplog.text
    for name, value in CREDENTIALS.items():
        assert value.split("=")[-1].split(" ")[-1] not in log, f"{name} reached the wire log"
        assert f"{name.lower()}: <hidden>" in log
    assert "set-cookie-Gw2" not in log and "set-cookie: <hidden>" in log
    for value in PLAIN.values():
        assert value in log
