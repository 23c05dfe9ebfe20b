"""Streams per caller, on a real bridge subprocess: one caller opening as many streams on one
long task as the bridge allows connections takes its share (a quarter of them), is refused
429 with ``Retry-After`` past it, and other callers and health checks still get through.

A caller is its token on a bridge with credentials, its address (one IP) on an open one:
the second caller of an open bridge connects from 127.0.0.2, another loopback address.
"""
from __future__ import annotations

import asyncio
import contextlib
import json

import httpx
import pytest

from support.bridge_in_process import InProcessBridge
from support.bridge_process import echo_log
from support.bridge_rpc import HEADERS, grpc_client, grpc_retry_info, jsonrpc_request, message, state, task_of
from support.waiting import wait_until

CONNECTIONS = 8   # OVOS_A2A_MAX_CONNECTIONS here
SHARE = 2         # its quarter: the default share of each caller


class Caller:
    """One caller of ``bridge``: its own client, from ``address``, with ``token`` when given."""

    def __init__(self, bridge: InProcessBridge, address: str = "127.0.0.1", token: str | None = None) -> None:
        self.bridge = bridge
        self.headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
        self.client = httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30)

    def send(self, text: str, blocking: bool = True) -> httpx.Response:
        params = {"message": message(text)}
        if not blocking:
            params["configuration"] = {"returnImmediately": True}
        return self.client.post(self.bridge.url + "/", json=jsonrpc_request("SendMessage", params), headers=self.headers)

    def open_stream(self, stack: contextlib.ExitStack, method: str, params: dict) -> httpx.Response:
        """A JSON-RPC stream's response once its head came (it stays open in ``stack``)."""
        return stack.enter_context(self.client.stream(
            "POST", self.bridge.url + "/", json=jsonrpc_request(method, params),
            headers={**self.headers, "Accept": "text/event-stream"}))

    def open_rest_subscription(self, stack: contextlib.ExitStack, task_id: str) -> httpx.Response:
        """An HTTP+JSON SubscribeToTask's response once its head came."""
        return stack.enter_context(self.client.stream(
            "GET", f"{self.bridge.url}/rest/tasks/{task_id}:subscribe", headers=self.headers))

    def stream_to_the_end(self, text: str) -> tuple[int, list[dict]]:
        """SendStreamingMessage: its status and every event's ``result``."""
        with contextlib.ExitStack() as stack:
            response = self.open_stream(stack, "SendStreamingMessage", {"message": message(text)})
            events = [json.loads(line[5:]).get("result") for line in response.iter_lines() if line.startswith("data:")]
            return response.status_code, events

    def health(self) -> httpx.Response:
        return self.client.get(self.bridge.root + "/health")

    def close(self) -> None:
        self.client.close()


def ended_completed(events: list[dict]) -> bool:
    last = events[-1] if events else {}
    return (last.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
            or state(last.get("task", {})) == "TASK_STATE_COMPLETED")


def hold_and_subscribe(bridge: InProcessBridge, first: Caller, stack: contextlib.ExitStack, rest: bool) -> list:
    """``first`` starts a long task (held until its release file exists) and opens as many
    subscriptions to it as the bridge allows connections; their responses."""
    task_id = task_of(first.send("hold:long", blocking=False).json())["id"]
    wait_until(lambda: bridge.calls("hold:long"), "the held turn to begin", until=lambda n: n == 1)
    if rest:
        return [first.open_rest_subscription(stack, task_id) for _ in range(CONNECTIONS)]
    return [first.open_stream(stack, "SubscribeToTask", {"id": task_id}) for _ in range(CONNECTIONS)]


def assert_refused_past_the_share(responses: list[httpx.Response]) -> None:
    assert [r.status_code for r in responses] == [200] * SHARE + [429] * (CONNECTIONS - SHARE), \
        [(r.status_code, r.read()) for r in responses]
    refused = responses[-1]
    assert refused.headers["retry-after"] == "1", refused.headers
    assert refused.headers["content-type"] == "application/json", refused.headers  # never a stream
    assert "too many streams" in refused.read().decode(), refused.text


def release(bridge: InProcessBridge) -> None:
    (bridge.call_log.parent / "long").touch()


@pytest.mark.parametrize("rest", [False, True], ids=["JSON-RPC", "HTTP+JSON"])
def test_on_an_open_bridge_one_address_cannot_take_the_connections_of_another(tmp_path, rest):
    """A caller (127.0.0.1) opening as many subscriptions as there are connections gets its
    share and 429s past it; another address streams and sends meanwhile, and health checks
    are answered. Once the task ended, the first caller's share is its own again."""
    with InProcessBridge(env={"OVOS_A2A_MAX_CONNECTIONS": str(CONNECTIONS)}, call_log=echo_log(tmp_path)) as bridge:
        first, other = Caller(bridge), Caller(bridge, address="127.0.0.2")
        try:
            with contextlib.ExitStack() as stack:
                subscriptions = hold_and_subscribe(bridge, first, stack, rest)
                status, events = other.stream_to_the_end("from elsewhere")
                assert status == 200 and ended_completed(events), (status, events)
                sent = other.send("sent from elsewhere")
                assert sent.status_code == 200 and state(task_of(sent.json())) == "TASK_STATE_COMPLETED", sent.text
                assert other.health().status_code == 200
                assert_refused_past_the_share(subscriptions)
                release(bridge)
                for response in subscriptions[:SHARE]:  # each read to its end: the task's
                    assert [line for line in response.iter_lines() if line.startswith("data:")], response
            status, events = first.stream_to_the_end("again")
            assert status == 200 and ended_completed(events), (status, events)
        finally:
            first.close()
            other.close()


def test_with_credentials_a_caller_is_its_token(tmp_path):
    """On a bridge with tokens, the share is per token: another token streams and sends
    from the same address while the first is past its share."""
    env = {"OVOS_A2A_MAX_CONNECTIONS": str(CONNECTIONS), "OVOS_A2A_TOKENS": "token-of-one,token-of-another"}
    with InProcessBridge(env=env, call_log=echo_log(tmp_path)) as bridge:
        first, other = Caller(bridge, token="token-of-one"), Caller(bridge, token="token-of-another")
        try:
            with contextlib.ExitStack() as stack:
                subscriptions = hold_and_subscribe(bridge, first, stack, rest=False)
                status, events = other.stream_to_the_end("another token")
                assert status == 200 and ended_completed(events), (status, events)
                sent = other.send("sent with another token")
                assert sent.status_code == 200 and state(task_of(sent.json())) == "TASK_STATE_COMPLETED", sent.text
                assert other.health().status_code == 200
                assert_refused_past_the_share(subscriptions)
                refused = first.stream_to_the_end("one more")  # a streamed send counts too
                assert refused[0] == 429, refused
                release(bridge)
        finally:
            first.close()
            other.close()


def test_over_grpc_a_caller_past_its_share_is_told_resource_exhausted_with_retry_info(tmp_path):
    """gRPC streams count per address too (the gRPC port's own count): a caller's
    subscription past its share ends at once with RESOURCE_EXHAUSTED and a RetryInfo, while
    its streams within the share carry the task to its end."""
    import grpc
    from a2a.types import SubscribeToTaskRequest

    with InProcessBridge("--grpc-port", "0", env={"OVOS_A2A_MAX_CONNECTIONS": str(CONNECTIONS)},
                         call_log=echo_log(tmp_path)) as bridge:
        first = Caller(bridge)
        try:
            task_id = task_of(first.send("hold:long", blocking=False).json())["id"]
        finally:
            first.close()
        wait_until(lambda: bridge.calls("hold:long"), "the held turn to begin", until=lambda n: n == 1)

        async def subscribe_past_the_share():
            async with grpc_client(bridge.url, streaming=True) as client:
                streams = [client.subscribe(SubscribeToTaskRequest(id=task_id)) for _ in range(SHARE + 1)]
                for subscription in streams[:SHARE]:
                    await anext(subscription)  # open, with the task's first event
                try:
                    await anext(streams[SHARE])
                except Exception as exc:  # noqa: BLE001 - the cause is what is looked at
                    refusal = exc
                else:
                    raise AssertionError("a stream past the share was served")
                release(bridge)
                ends = [[event async for event in subscription] for subscription in streams[:SHARE]]
                return refusal, ends

        refusal, ends = asyncio.run(asyncio.wait_for(subscribe_past_the_share(), 30))
        call = refusal.__cause__
        assert isinstance(call, grpc.aio.AioRpcError), repr(refusal)
        assert call.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, call
        assert grpc_retry_info(call).retry_delay.seconds == 1
        assert all(ends), ends
