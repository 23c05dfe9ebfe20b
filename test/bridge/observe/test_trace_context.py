"""One trace from the caller to the agent a relay persona asks: the ``traceparent`` a caller
sends the bridge reaches the persona's turn, and the persona's handler (this plugin) sends it
on to a real a2a-sdk agent on loopback. With tracing off, as it came; with ``--tracing``, as
the turn's span in the same trace, and the bridge's and the a2a-sdk's spans are recorded."""
from __future__ import annotations

import asyncio
import json
import re
import secrets

import httpx
from a2a.client import ClientCallContext
from a2a.types import Message, Part, Role, SendMessageRequest

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess
from support.bridge_rpc import HEADERS, grpc_client, message, state, task_of
from support.personas import relay_bridge
from support.waiting import wait_until


def traceparent() -> tuple[str, str]:
    """A fresh ``traceparent`` and its trace id."""
    trace_id = secrets.token_hex(16)
    return f"00-{trace_id}-{secrets.token_hex(8)}-01", trace_id


def ask_through_the_relay(bridge: InProcessBridge | BridgeProcess, parent: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("hello there")}}
    response = httpx.post(bridge.url + "/", json=body, timeout=60,
                          headers={**HEADERS, "traceparent": parent, "tracestate": "vendor=abc"})
    assert response.status_code == 200, response.text
    return task_of(response.json())


def seen_by_the_agent(agent, trace_id: str) -> list[dict]:
    """The requests the remote agent got in this trace."""
    return [seen for seen in agent.headers() if trace_id in seen["headers"].get("traceparent", "")]


def spans_of(bridge: BridgeProcess) -> list[dict]:
    """The spans the console exporter printed so far (one JSON object each)."""
    return [json.loads(text) for text in re.findall(r"^\{\n.*?^\}$", bridge.stdout_text(), re.S | re.M)]


def test_the_callers_traceparent_reaches_the_remote_agent_as_it_came(agent, private_state, tmp_path):
    parent, trace_id = traceparent()
    with relay_bridge(tmp_path, agent.agent("echo")) as bridge:
        task = ask_through_the_relay(bridge, parent)
    assert state(task) == "TASK_STATE_COMPLETED", task
    seen = seen_by_the_agent(agent, trace_id)
    assert any(each["method"] == "POST" for each in seen), agent.headers()[-3:]
    for each in seen:
        assert each["headers"]["traceparent"] == parent, each
        assert each["headers"].get("tracestate") == "vendor=abc", each


def test_over_grpc_in_and_out_the_trace_goes_on(agent, private_state, tmp_path):
    """The caller asks the bridge over gRPC; the relay asks an agent that speaks only gRPC."""
    parent, trace_id = traceparent()
    with relay_bridge(tmp_path, agent.agent("grpc-only"), "--grpc-port", "0") as bridge:
        async def call() -> None:
            async with grpc_client(bridge.url) as client:
                request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=secrets.token_hex(8),
                                                             parts=[Part(text="hello there")]))
                async for _ in client.send_message(request, context=ClientCallContext(
                        service_parameters={"traceparent": parent})):
                    pass

        asyncio.run(call())
    seen = seen_by_the_agent(agent, trace_id)
    assert "GRPC" in [each["method"] for each in seen], seen  # the card over HTTP, then the call over gRPC
    assert all(each["headers"]["traceparent"] == parent for each in seen), seen


def test_a_malformed_traceparent_is_not_sent_on(agent, private_state, tmp_path):
    trace_id = secrets.token_hex(16)
    with relay_bridge(tmp_path, agent.agent("echo")) as bridge:
        assert state(ask_through_the_relay(bridge, f"00-{trace_id}-{'0' * 16}-01")) == "TASK_STATE_COMPLETED"
    assert seen_by_the_agent(agent, trace_id) == []


def test_with_tracing_the_turn_is_a_span_of_the_callers_trace(agent, private_state, tmp_path):
    parent, trace_id = traceparent()
    env = {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "bridge-under-test",
           "OTEL_BSP_SCHEDULE_DELAY": "50"}  # exported every 50 ms (printed on stdout)
    with relay_bridge(tmp_path, agent.agent("echo"), "--tracing", env=env, serve=BridgeProcess) as bridge:
        assert state(ask_through_the_relay(bridge, parent)) == "TASK_STATE_COMPLETED"
        ours = wait_until(lambda: [span for span in spans_of(bridge) if span["context"]["trace_id"] == "0x" + trace_id],
                          "the spans of the trace to be exported",
                          until=lambda ours: {"persona turn", "POST"} <= {span["name"] for span in ours})
    seen = [each for each in seen_by_the_agent(agent, trace_id) if each["method"] == "POST"]
    assert seen, agent.headers()[-3:]
    sent_on = seen[0]["headers"]["traceparent"]
    assert sent_on.split("-")[1] == trace_id and sent_on != parent, sent_on  # the same trace, the turn's span
    names = {span["name"] for span in ours}
    assert any(span["name"].startswith("a2a.") for span in ours), names  # the a2a-sdk's spans are back on
    turn = next(span for span in ours if span["name"] == "persona turn")
    assert turn["context"]["span_id"] == "0x" + sent_on.split("-")[2], (turn, sent_on)
    assert all(span["resource"]["attributes"]["service.name"] == "bridge-under-test" for span in ours)


def test_a_traceparent_of_a_later_version_goes_on_by_its_first_fields(agent, private_state, tmp_path):
    """W3C Trace Context §3.2.4: a version after 00 is read by its first four fields (what follows
    them begins with ``-``), and goes on as version 00; a version-00 header with more is invalid."""
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    with relay_bridge(tmp_path, agent.agent("echo")) as bridge:
        task = ask_through_the_relay(bridge, f"cc-{trace_id}-{parent_id}-01-what-comes-later")
        assert state(task) == "TASK_STATE_COMPLETED", task
    seen = seen_by_the_agent(agent, trace_id)
    assert seen, "a traceparent of a later version was dropped"
    assert all(each["headers"]["traceparent"] == f"00-{trace_id}-{parent_id}-01" for each in seen), seen


def test_a_tracestate_that_is_no_valid_list_is_not_sent_on(agent, private_state, tmp_path):
    """An anonymous caller's ``tracestate`` reaches third-party agents only as a valid W3C list:
    any printable text (a forged log line, a long blob) is dropped, the traceparent still goes on."""
    with relay_bridge(tmp_path, agent.agent("echo")) as bridge:
        for state_text in ("not a list at all", "a=1,a=2", "x" * 500, "k=" + "v" * 300, "key=va\x7flue"):
            parent, trace_id = traceparent()
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("hi")}}
            response = httpx.post(bridge.url + "/", json=body, timeout=60,
                                  headers={**HEADERS, "traceparent": parent, "tracestate": state_text})
            assert state(task_of(response.json())) == "TASK_STATE_COMPLETED", response.text
            seen = seen_by_the_agent(agent, trace_id)
            assert seen, f"the traceparent did not go on with tracestate {state_text!r}"
            assert all("tracestate" not in each["headers"] for each in seen), (state_text, seen)
