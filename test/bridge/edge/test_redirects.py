"""Bridge: no redirect is built from what a caller chose.

Starlette answers a path that differs from a route by its trailing slash with a redirect to
the other form, built from the request's ``Host`` header: any caller could make the bridge send
a browser to another site (an open redirect). The bridge redirects nowhere: such a path is not
found, whichever binding or page it looks like, with one persona or a directory of them.
"""
from __future__ import annotations

import json

import httpx

from support.bridge_in_process import InProcessBridge
from ovos_a2a_solver.bridge.backends.persona_file import DEFAULT_PERSONA_FILE

EVIL = "evil.example"
PATHS = ("/a2a/rest/t1/tasks/", "/a2a/rest/tasks/", "/a2a/rest/v1/tasks/", "/health/", "/a2a/rest/message:send/",
         "/.well-known/agent-card.json/")


def assert_no_redirect(root: str, paths) -> None:
    for path in paths:
        for method in ("GET", "POST"):
            response = httpx.request(method, root + path, headers={"Host": EVIL, "A2A-Version": "1.0"},
                                     follow_redirects=False, timeout=10)
            assert not response.is_redirect, f"{method} {path}: {response.status_code} to {response.headers}"
            assert EVIL not in response.headers.get("location", ""), f"{method} {path} sends callers to {EVIL}"


def test_a_path_with_a_trailing_slash_is_not_redirected_to_the_host_the_caller_named():
    with InProcessBridge() as bridge:
        assert_no_redirect(bridge.root, PATHS)


def test_a_directory_of_personas_redirects_nowhere_either(tmp_path):
    personas = tmp_path / "personas"
    personas.mkdir()
    kitchen = json.loads(DEFAULT_PERSONA_FILE.read_text())
    kitchen["name"] = "kitchen"
    (personas / "kitchen.json").write_text(json.dumps(kitchen))
    with InProcessBridge("--personas-dir", str(personas), backend="persona") as bridge:
        assert_no_redirect(bridge.root, ("/health/", "/a2a/kitchen/rest/tasks/", "/metrics/"))
