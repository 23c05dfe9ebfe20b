# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The client against a hostile agent: every resource it spends on a reply has one bound.

The agent here is a small real HTTP server on a loopback port, written for these faults
(the scripted agents of ``test/support/a2a_agent.py`` are the a2a-sdk's own server, which
never sends them): a 200 MiB blocking reply, a 200 MiB line of an event stream, an artifact
rewritten every 20 ms, and look-ups answered just before the deadline. The memory a reply
costs is measured in a process of its own (the peak resident size the kernel reports).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from a2a.client import A2AClientTimeoutError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from ovos_a2a_solver import A2AClient, AnswerLimits, RetryPolicy
from ovos_a2a_solver._defaults import DEFAULT_ANSWER_CUT
from support.network import serving

ROOT = Path(__file__).resolve().parents[3]
HUGE = 200 * 1024 * 1024        # bytes of the oversized reply
PIECE = 1024 * 1024             # sent in pieces of this size, made as they go (the server holds one)
PEAK_LIMIT = 200 * 1024 * 1024  # the client process's peak resident size must stay below this
SLOW_LOOKUP = 2.6               # seconds the slow agent takes to answer ListTasks and GetTask
TURN_TIMEOUT = 3.0


def _card(base: str, name: str) -> dict:
    return {"name": name, "description": "a hostile agent", "version": "1.0.0",
            "supportedInterfaces": [{"url": f"{base}/{name}/", "protocolBinding": "JSONRPC",
                                     "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}


async def _huge_text():
    """A JSON string's content of ``HUGE`` bytes, piece by piece."""
    piece = b"a" * PIECE
    for _ in range(HUGE // PIECE):
        yield piece


def _rpc(request_id, result: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


class HostileAgent:
    """The agents under ``/{name}``: ``huge`` (a 200 MiB message reply, blocking or one SSE
    line), ``rewriting`` (one artifact rewritten between two texts every 20 ms for 10 s) and
    ``slow`` (SendMessage never answered; ListTasks and GetTask answered after ``SLOW_LOOKUP``)."""

    def __init__(self) -> None:
        self.base = ""
        self.sent_message_id = ""

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{name}/.well-known/agent-card.json", self.card),
                                 Route("/{name}/", self.rpc, methods=["POST"])])

    async def card(self, request: Request) -> JSONResponse:
        return JSONResponse(_card(self.base, request.path_params["name"]))

    async def rpc(self, request: Request):
        body = await request.json()
        name, method, request_id = request.path_params["name"], body["method"], body.get("id")
        return await getattr(self, name)(method, request_id, body.get("params") or {})

    async def huge(self, method: str, request_id, params: dict):
        head = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"message": {
            "messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "@"}]}}}).encode()
        before, after = head.split(b"@")
        streamed = method == "SendStreamingMessage"

        async def body():
            yield (b"data: " if streamed else b"") + before
            async for piece in _huge_text():
                yield piece
            yield after + (b"\n\n" if streamed else b"")

        return StreamingResponse(body(), media_type="text/event-stream" if streamed else "application/json")

    async def rewriting(self, method: str, request_id, params: dict):
        first = " ".join(f"Alpha sentence {n}." for n in range(600))   # about 10 KiB each
        second = " ".join(f"Beta sentence {n}." for n in range(600))
        ids = {"taskId": "t1", "contextId": "c1"}

        async def events():
            yield b"data: " + _rpc(request_id, {"task": {"id": "t1", "contextId": "c1",
                                                         "status": {"state": "TASK_STATE_WORKING"}}}) + b"\n\n"
            for n in range(500):  # 10 s
                text = first if n % 2 == 0 else second
                yield b"data: " + _rpc(request_id, {"artifactUpdate": {
                    **ids, "artifact": {"artifactId": "a1", "parts": [{"text": text}]}, "append": False}}) + b"\n\n"
                await asyncio.sleep(0.02)
            yield b"data: " + _rpc(request_id, {"statusUpdate": {
                **ids, "status": {"state": "TASK_STATE_COMPLETED"}}}) + b"\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def slow(self, method: str, request_id, params: dict):
        task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"},
                "history": [{"messageId": self.sent_message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]}]}
        if method == "SendMessage":
            self.sent_message_id = self.sent_message_id or params["message"]["messageId"]
            await asyncio.sleep(60)  # never, within a turn
        await asyncio.sleep(SLOW_LOOKUP)
        if method == "ListTasks":
            return JSONResponse(json.loads(_rpc(request_id, {"tasks": [task], "nextPageToken": "", "pageSize": 50,
                                                            "totalSize": 1})))
        return JSONResponse(json.loads(_rpc(request_id, task)))


@contextlib.contextmanager
def hostile_agent():
    """The hostile agents served by uvicorn on a loopback port, in a thread."""
    agent = HostileAgent()
    with serving(agent.app(), force_exit=True, lifespan="off") as port:
        agent.base = f"http://127.0.0.1:{port}"
        yield agent


#: One turn in a process of its own: its outcome and the process's peak resident size.
TURN = """
import json, sys
from ovos_a2a_solver import A2AClient, RetryPolicy
outcome = {}
try:
    with A2AClient(sys.argv[1], timeout=25, streaming=sys.argv[2] == "1", retries=RetryPolicy(max_retries=0)) as client:
        answer = client.send_task("hello")
    outcome = {"answer_chars": len(answer), "answer_end": answer[-100:]}
except Exception as exc:
    outcome = {"error": type(exc).__name__, "message": str(exc)[:300]}
with open("/proc/self/status") as status:
    outcome["peak_bytes"] = 1024 * int(next(l for l in status if l.startswith("VmHWM")).split()[1])
print(json.dumps(outcome))
"""


def _turn_in_a_process(url: str, streaming: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run([sys.executable, "-c", TURN, url, "1" if streaming else "0"], capture_output=True,
                          text=True, timeout=60, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("streaming", [False, True], ids=["blocking-body", "one-sse-line"])
def test_a_200_mib_reply_is_refused_once_it_passes_the_byte_limit_and_is_never_held(streaming):
    with hostile_agent() as agent:
        started = time.monotonic()
        outcome = _turn_in_a_process(f"{agent.base}/huge", streaming)
        took = time.monotonic() - started
    assert outcome["peak_bytes"] < PEAK_LIMIT, f"the client's peak was {outcome['peak_bytes'] / 2**20:.0f} MiB"
    assert outcome.get("error") == "ReplyTooLargeError", outcome
    assert "4194304 bytes" in outcome["message"], outcome
    assert took < 30, took


def test_an_artifact_rewritten_again_and_again_is_said_up_to_the_answer_limit_then_cut():
    cap = 50_000
    with hostile_agent() as agent, A2AClient(f"{agent.base}/rewriting", timeout=20, streaming=True,
                                             limits=AnswerLimits(max_answer_chars=cap)) as client:
        started = time.monotonic()
        said = list(client.stream_sentences("hello", session_id="s1"))
        took = time.monotonic() - started
    assert said[-1] == DEFAULT_ANSWER_CUT, said[-3:]
    handed = sum(len(sentence) for sentence in said[:-1])
    assert handed <= cap, f"{handed} characters handed to speech, the limit is {cap}"
    assert handed > cap // 2, handed  # the answer was said, up to the limit
    assert took < 9, took  # the rest of the stream was not read


def test_the_look_ups_of_a_turn_share_its_one_deadline():
    with hostile_agent() as agent, A2AClient(f"{agent.base}/slow", timeout=TURN_TIMEOUT,
                                             retries=RetryPolicy(max_retries=0)) as client:
        with pytest.raises(A2AClientTimeoutError):  # the agent has the message, and never answers
            client.send_task("hi", session_id="s1")
        assert client.conversation("s1").pending_message_id
        started = time.monotonic()
        with pytest.raises(A2AClientTimeoutError):  # its task looked up (ListTasks, GetTask), then asked again
            client.send_task("and now?", session_id="s1")
        took = time.monotonic() - started
    assert took < TURN_TIMEOUT + 1.0, f"the turn took {took:.1f} s with a timeout of {TURN_TIMEOUT} s"
