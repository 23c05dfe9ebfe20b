"""``/metrics``: off by default; on, the Prometheus text format, counting what real requests
did on every binding (JSON-RPC and HTTP+JSON in A2A 1.0 and 0.3, gRPC), messages in flight
and refused as busy, turn durations, the backend's circuit and webhook deliveries; behind the
credentials of the A2A endpoint; with workers, the sum of all of them."""
from __future__ import annotations

import asyncio
import uuid

import httpx
from a2a.types import Message, Part, Role, SendMessageRequest
from prometheus_client.parser import text_string_to_metric_families

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess
from support.bridge_rpc import HEADERS, grpc_client, health, message, rpc, send, task_of, v03_message
from support.waiting import wait_until
from support.webhooks import Webhook, quick

TOKEN = "metrics-reader-token-5Jr"


def samples(bridge: InProcessBridge | BridgeProcess, headers: dict | None = None) -> dict:
    """(sample name, frozenset of its labels) -> value, from ``GET /metrics``."""
    response = httpx.get(bridge.root + "/metrics", headers=headers or {}, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4"), response.headers
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.text) for sample in family.samples}


def requests_of(found: dict, **labels: str) -> float:
    return found.get(("ovos_a2a_requests_total", frozenset(labels.items())), 0)


def test_metrics_are_off_by_default():
    with InProcessBridge() as bridge:
        assert task_of(send(bridge.url, message("hello")))
        assert httpx.get(bridge.root + "/metrics", timeout=10).status_code == 404


def test_requests_on_every_binding_are_counted_by_version_method_and_outcome():
    with InProcessBridge("--metrics", "--grpc-port", "0") as bridge:
        assert task_of(send(bridge.url, message("one")))
        assert httpx.post(bridge.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                                  "params": {"message": v03_message("two")}},
                          timeout=30).json()["result"]["status"]["state"] == "completed"
        assert httpx.post(bridge.url + "/rest/message:send", json={"message": message("three")}, headers=HEADERS,
                          timeout=30).status_code == 200
        v03_rest = {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "content": [{"text": "four"}]}}
        assert httpx.post(bridge.url + "/rest/v1/message:send", json=v03_rest, timeout=30).status_code == 200
        assert "error" in rpc(bridge.url, "GetTask", {"id": "no-such-task"})
        assert "error" in rpc(bridge.url, "MadeUpMethod", {})

        async def over_grpc() -> None:
            async with grpc_client(bridge.url) as client:
                request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex,
                                                             parts=[Part(text="five")]))
                async for _ in client.send_message(request):
                    pass

        asyncio.run(over_grpc())
        found = wait_until(lambda: samples(bridge), "the gRPC call to be counted",
                           until=lambda found: requests_of(found, binding="gRPC", version="1.0",
                                                           method="SendMessage", outcome="ok"))
    for binding, version, method in [("JSON-RPC", "1.0", "SendMessage"), ("JSON-RPC", "0.3", "message/send"),
                                     ("HTTP+JSON", "1.0", "SendMessage"), ("HTTP+JSON", "0.3", "SendMessage"),
                                     ("gRPC", "1.0", "SendMessage")]:
        assert requests_of(found, binding=binding, version=version, method=method, outcome="ok") == 1, \
            (binding, version, method, found)
    assert requests_of(found, binding="JSON-RPC", version="1.0", method="GetTask", outcome="rejected") == 1, found
    assert requests_of(found, binding="JSON-RPC", version="-", method="other", outcome="rejected") == 1, found
    assert not any("MadeUpMethod" in str(key) for key in found)  # a caller's word never becomes a label
    assert found[("ovos_a2a_turn_duration_seconds_count", frozenset({("end", "answered")}))] == 5, found
    assert found[("ovos_a2a_messages_in_flight", frozenset())] == 0
    assert found[("ovos_a2a_backend_circuit_open", frozenset())] == 0


def test_a_message_in_flight_and_one_refused_as_busy():
    with InProcessBridge("--metrics", "--max-concurrent", "1") as bridge:
        task_of(send(bridge.url, message("sleep:1"), blocking=False))
        wait_until(lambda: health(bridge)["running"] == 1, "the slow turn to take the slot")
        during = samples(bridge)
        refused = httpx.post(bridge.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                                     "params": {"message": message("now?")}},
                             headers=HEADERS, timeout=30)
        assert refused.status_code == 429, refused.text
        after = wait_until(lambda: samples(bridge), "the slow turn to end",
                           until=lambda found: found[("ovos_a2a_messages_in_flight", frozenset())] == 0)
    assert during[("ovos_a2a_messages_in_flight", frozenset())] == 1, during
    assert after[("ovos_a2a_busy_refusals_total", frozenset({("reason", "busy")}))] == 1, after
    assert requests_of(after, binding="JSON-RPC", version="1.0", method="SendMessage", outcome="busy") == 1, after
    assert after[("ovos_a2a_turn_duration_seconds_count", frozenset({("end", "answered")}))] == 1, after
    assert after[("ovos_a2a_turn_duration_seconds_sum", frozenset({("end", "answered")}))] >= 1, after


def test_a_failing_backend_opens_the_circuit():
    with InProcessBridge("--metrics", env={"OVOS_A2A_BACKEND_RETRIES": "0"}) as bridge:
        for _ in range(3):
            assert task_of(send(bridge.url, message("fail")))["status"]["state"] == "TASK_STATE_FAILED"
        found = samples(bridge)
    assert found[("ovos_a2a_backend_circuit_open", frozenset())] == 1, found
    assert found[("ovos_a2a_backend_circuit_opened_total", frozenset())] == 1, found
    assert found[("ovos_a2a_turn_duration_seconds_count", frozenset({("end", "failed")}))] == 3, found


def test_webhook_deliveries_are_counted():
    answered_400 = Webhook(lambda _hook, out: out.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                                                        b"Connection: close\r\n\r\n"))
    good = Webhook(quick)
    try:
        with InProcessBridge("--metrics", env={"OVOS_A2A_PUSH_ALLOW": "127.0.0.1"}) as bridge:
            for hook in (good, answered_400):
                params = {"message": message("hello"), "configuration": {"taskPushNotificationConfig": {
                    "url": hook.url, "id": "c1"}}}
                assert task_of(rpc(bridge.url, "SendMessage", params))["status"]["state"] == "TASK_STATE_COMPLETED"
            wait_until(lambda: good.completed and answered_400.completed_bodies, "both webhooks to hear the end")
            found = wait_until(lambda: samples(bridge), "the deliveries to be counted",
                               until=lambda found: found.get(("ovos_a2a_push_deliveries_total",
                                                              frozenset({("outcome", "delivered")}))) == good.requests)
    finally:
        good.close()
        answered_400.close()
    assert found[("ovos_a2a_push_deliveries_total", frozenset({("outcome", "refused")}))] == \
        answered_400.requests, found


def test_metrics_need_the_endpoints_credentials():
    with InProcessBridge("--metrics", env={"OVOS_A2A_TOKENS": TOKEN}) as bridge:
        refused = httpx.get(bridge.root + "/metrics", timeout=10)
        assert refused.status_code == 401, refused.text
        assert "ovos_a2a" not in refused.text
        found = samples(bridge, {"Authorization": f"Bearer {TOKEN}"})
    assert ("ovos_a2a_messages_in_flight", frozenset()) in found


def test_every_worker_shows_the_sum_of_all_workers():
    with BridgeProcess("--metrics", "--workers", "2") as bridge:
        for n in range(8):  # a connection each: the kernel spreads them over the workers
            assert task_of(send(bridge.url, message(f"hello {n}")))
        seen = []
        workers = set()
        for _ in range(6):
            found = samples(bridge)
            seen.append(requests_of(found, binding="JSON-RPC", version="1.0", method="SendMessage", outcome="ok"))
            workers |= {dict(labels)["pid"] for name, labels in found if name == "ovos_a2a_backend_circuit_open"}
    assert seen == [8] * 6, seen
    assert len(workers) == 2, workers  # each worker's own circuit
