"""Bridge: push notifications, without SSRF.

A real webhook receiver on loopback (allowed with ``OVOS_A2A_PUSH_ALLOW``) gets every event
of a task, in order, with the configured token and credentials; a receiver that fails twice
still gets the event; every private, loopback, link-local, CGNAT, multicast, reserved,
metadata or non-http(s) webhook is refused where it is registered; configs are kept per
owner and work over JSON-RPC, HTTP+JSON and gRPC, and survive a restart.
"""
from __future__ import annotations

import asyncio
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from a2a.types import (DeleteTaskPushNotificationConfigRequest, GetTaskPushNotificationConfigRequest,
                       ListTaskPushNotificationConfigsRequest, TaskPushNotificationConfig)

from support.bridge_in_process import InProcessBridge
from support.bridge_process import BridgeProcess
from support.bridge_rpc import artifact_text, grpc_client, message, rpc
from support.waiting import wait_until


from ovos_a2a_solver.bridge.process.startup import OPEN_WARNING

V1 = {"A2A-Version": "1.0"}
TOKEN = "push-token-Xy7"
CREDENTIALS = "push-cred-Qw2"


class Receiver:
    """A webhook on 127.0.0.1 that records what it is sent; the first ``fail`` POSTs get 503."""

    def __init__(self, fail: int = 0) -> None:
        self.received: list[dict] = []
        self.attempts = 0
        self.fail = fail
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.attempts += 1
                if receiver.attempts <= receiver.fail:
                    self.send_response(503)
                    self.end_headers()
                    return
                receiver.received.append({"headers": dict(self.headers), "body": json.loads(body)})
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def states(self) -> list[str]:
        out = []
        for item in self.received:
            body = item["body"]
            if "task" in body:
                out.append(body["task"]["status"]["state"])
            elif "statusUpdate" in body:
                out.append(body["statusUpdate"]["status"]["state"])
        return out


def push_config(url: str, **extra) -> dict:
    return {"url": url, "token": TOKEN, "authentication": {"scheme": "Bearer", "credentials": CREDENTIALS}, **extra}


@pytest.fixture(scope="module")
def allowing_bridge():
    with InProcessBridge("--grpc-port", "0", env={"OVOS_A2A_PUSH_ALLOW": "127.0.0.1,hooks.internal.invalid"}) as bridge:
        yield bridge


@pytest.fixture()
def receiver():
    r = Receiver()
    yield r
    r.close()


def test_the_card_offers_push_notifications(allowing_bridge):
    card = httpx.get(allowing_bridge.root + "/.well-known/agent-card.json", timeout=10).json()
    assert card["capabilities"]["pushNotifications"] is True


def test_an_allowed_receiver_gets_every_event_in_order_with_its_credentials(allowing_bridge, receiver):
    params = {"message": message("slow:0.1"), "configuration": {"taskPushNotificationConfig": push_config(receiver.url),
                                                                "returnImmediately": True}}
    task = rpc(allowing_bridge.url, "SendMessage", params)["result"]["task"]
    wait_until(lambda: "TASK_STATE_COMPLETED" in receiver.states(), "the completed event to reach the webhook")
    states = receiver.states()
    assert states[-1] == "TASK_STATE_COMPLETED" and "TASK_STATE_WORKING" in states, states
    assert states.index("TASK_STATE_WORKING") < states.index("TASK_STATE_COMPLETED")
    chunks = artifact_text([item["body"]["artifactUpdate"] for item in receiver.received
                            if "artifactUpdate" in item["body"]])
    assert chunks == "Sentence 1. Sentence 2. Sentence 3. Sentence 4. Sentence 5."
    for item in receiver.received:
        assert item["headers"]["X-A2A-Notification-Token"] == TOKEN
        assert item["headers"]["Authorization"] == f"Bearer {CREDENTIALS}"
        ids = {v.get("taskId") or v.get("id") for v in item["body"].values()}
        assert ids == {task["id"]}


def test_a_replayed_message_registers_the_push_config_it_names(allowing_bridge, receiver):
    first = message("ask:Which city?")
    task = rpc(allowing_bridge.url, "SendMessage", {"message": first})["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    params = {"message": first, "configuration": {"taskPushNotificationConfig": push_config(receiver.url, id="c1")}}
    replayed = rpc(allowing_bridge.url, "SendMessage", params)["result"]["task"]
    assert replayed["id"] == task["id"]  # a retry: the same task, no second turn
    configs = rpc(allowing_bridge.url, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})["result"]["configs"]
    assert [(c["id"], c["url"]) for c in configs] == [("c1", receiver.url)]
    follow_up = message("Paris", task_id=task["id"], context_id=task["contextId"])
    assert rpc(allowing_bridge.url, "SendMessage", {"message": follow_up})["result"]["task"]["status"]["state"] \
        == "TASK_STATE_COMPLETED"
    wait_until(lambda: "TASK_STATE_COMPLETED" in receiver.states(), "the completed event to reach the webhook")
    assert receiver.received[-1]["headers"]["Authorization"] == f"Bearer {CREDENTIALS}"


def test_a_receiver_that_fails_twice_still_gets_the_event(allowing_bridge):
    flaky = Receiver(fail=2)
    try:
        params = {"message": message("hello"), "configuration": {"taskPushNotificationConfig": push_config(flaky.url)}}
        assert rpc(allowing_bridge.url, "SendMessage", params)["result"]["task"]["status"]["state"] \
            == "TASK_STATE_COMPLETED"
        wait_until(lambda: "TASK_STATE_COMPLETED" in flaky.states(), "the completed event after two failures")
        assert flaky.attempts >= 3
    finally:
        flaky.close()


FORBIDDEN = ["http://127.0.0.1:9/hook", "http://localhost/hook", "http://10.1.2.3/hook", "http://172.16.0.1/hook",
             "http://192.168.1.1/hook", "http://169.254.169.254/latest/meta-data", "http://100.64.0.1/hook",
             "http://[::1]/hook", "http://[::ffff:127.0.0.1]/hook", "http://[::ffff:10.0.0.1]/hook",
             "http://[fe80::1]/hook", "http://[fd00:ec2::254]/hook", "http://224.0.0.1/hook", "http://0.0.0.0/hook",
             "http://240.0.0.1/hook", "http://[fec0::1]/hook",
             # IPv6 forms that carry a forbidden IPv4 address: 6to4 (2002::/16) and Teredo (2001::/32)
             "http://[2002:a9fe:a9fe::1]/latest/meta-data", "http://[2002:7f00:1::1]/hook",
             "http://[2002:a00:1::1]/hook", "http://[2001:0:4136:e378:8000:63bf:5601:5601]/hook",
             "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook", "ftp://example.com/hook", "file:///etc/passwd", "gopher://example.com/",
             "http://no-such-host.invalid/hook", "http://" + "x" * 70 + ".example/hook", "not a url"]


@pytest.fixture(scope="module")
def plain_bridge():
    """No allow-list: the guard's defaults."""
    with InProcessBridge() as bridge:
        yield bridge


@pytest.mark.parametrize("url", FORBIDDEN)
def test_forbidden_webhooks_are_refused_where_they_are_registered(plain_bridge, url):
    done = rpc(plain_bridge.url, "SendMessage", {"message": message("hello")})["result"]["task"]
    created = rpc(plain_bridge.url, "CreateTaskPushNotificationConfig", {"taskId": done["id"], **push_config(url)})
    assert created.get("error", {}).get("code") == -32602, created
    assert created["error"]["message"].startswith("webhook refused: "), created  # with the reason
    with_message = rpc(plain_bridge.url, "SendMessage", {"message": message("hi"),
                                                     "configuration": {"taskPushNotificationConfig": push_config(url)}})
    assert with_message.get("error", {}).get("code") == -32602, with_message
    listed = rpc(plain_bridge.url, "ListTaskPushNotificationConfigs", {"taskId": done["id"]})["result"]
    assert listed.get("configs", []) == []


def test_push_config_crud_over_jsonrpc_and_http_json(allowing_bridge, receiver):
    done = rpc(allowing_bridge.url, "SendMessage", {"message": message("ask:which city?")})["result"]["task"]
    created = rpc(allowing_bridge.url, "CreateTaskPushNotificationConfig",
                  {"taskId": done["id"], "id": "cfg-1", **push_config(receiver.url)})["result"]
    assert created["id"] == "cfg-1" and created["url"] == receiver.url
    got = rpc(allowing_bridge.url, "GetTaskPushNotificationConfig", {"taskId": done["id"], "id": "cfg-1"})["result"]
    assert got["url"] == receiver.url
    rest = f"{allowing_bridge.url}/rest/tasks/{done['id']}/pushNotificationConfigs"
    created_rest = httpx.post(rest, json={**push_config(receiver.url), "id": "cfg-2", "taskId": done["id"]},
                              headers=V1, timeout=10)
    assert created_rest.status_code == 200, created_rest.text
    listed = httpx.get(rest, headers=V1, timeout=10).json()
    assert {c["id"] for c in listed["configs"]} == {"cfg-1", "cfg-2"}
    assert httpx.delete(rest + "/cfg-2", headers=V1, timeout=10).status_code == 200
    assert rpc(allowing_bridge.url, "DeleteTaskPushNotificationConfig",
               {"taskId": done["id"], "id": "cfg-1"})["result"] is None
    assert rpc(allowing_bridge.url, "ListTaskPushNotificationConfigs", {"taskId": done["id"]})["result"].get(
        "configs", []) == []


def test_push_config_crud_over_grpc(allowing_bridge, receiver):
    done = rpc(allowing_bridge.url, "SendMessage", {"message": message("ask:which city?")})["result"]["task"]

    async def go():
        async with grpc_client(allowing_bridge.url) as client:
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=done["id"], id="g-1", url=receiver.url, token=TOKEN))
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=done["id"]))
            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=done["id"], id="g-1"))
            after = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=done["id"]))
            return created, listed, after

    created, listed, after = asyncio.run(go())
    assert created.id == "g-1" and [c.id for c in listed.configs] == ["g-1"] and list(after.configs) == []


def test_configs_survive_a_restart_and_the_next_event_is_delivered(tmp_path, receiver):
    state_dir = tmp_path / "state"
    env = {"OVOS_A2A_PUSH_ALLOW": "127.0.0.1"}
    with InProcessBridge(state_dir=state_dir, env=env) as first:
        waiting = rpc(first.url, "SendMessage", {"message": message("ask:which city?"), "configuration": {
            "taskPushNotificationConfig": push_config(receiver.url)}})["result"]["task"]
        wait_until(lambda: "TASK_STATE_INPUT_REQUIRED" in receiver.states(), "the input-required event")
    with InProcessBridge(state_dir=state_dir, env=env) as second:
        follow_up = message("Lisbon", task_id=waiting["id"], context_id=waiting["contextId"])
        assert rpc(second.url, "SendMessage", {"message": follow_up})["result"]["task"]["status"]["state"] == \
            "TASK_STATE_COMPLETED"
        wait_until(lambda: "TASK_STATE_COMPLETED" in receiver.states(), "the completed event after the restart")


def test_a_name_with_an_allowed_address_is_delivered_to_that_address(allowing_bridge, receiver):
    """``localhost`` is 127.0.0.1 and ::1; only 127.0.0.1 is allowed: delivery goes there."""
    url = receiver.url.replace("127.0.0.1", "localhost")
    params = {"message": message("hello"), "configuration": {"taskPushNotificationConfig": push_config(url)}}
    assert rpc(allowing_bridge.url, "SendMessage", params)["result"]["task"]["status"]["state"] \
        == "TASK_STATE_COMPLETED"
    wait_until(lambda: "TASK_STATE_COMPLETED" in receiver.states(), "the completed event at localhost")
    assert receiver.received[0]["headers"]["Host"] == url.split("/")[2]  # the name, though sent to the address


def test_a_host_allowed_by_name_is_registered_without_resolving(allowing_bridge):
    done = rpc(allowing_bridge.url, "SendMessage", {"message": message("hello")})["result"]["task"]
    created = rpc(allowing_bridge.url, "CreateTaskPushNotificationConfig",
                  {"taskId": done["id"], **push_config("https://hooks.internal.invalid/a2a")})
    assert created["result"]["url"] == "https://hooks.internal.invalid/a2a", created


@pytest.mark.parametrize("url", ["http://[2002:808:808::1]/hook", "http://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/hook",
                                 "http://[::ffff:8.8.8.8]/hook"])
def test_ipv6_forms_that_carry_a_public_ipv4_address_are_registered(plain_bridge, url):
    """6to4, Teredo and IPv4-mapped addresses are judged by the IPv4 address they carry:
    8.8.8.8 (and Teredo's public server) may be called, as 8.8.8.8 itself may."""
    waiting = rpc(plain_bridge.url, "SendMessage", {"message": message("ask:which city?")})["result"]["task"]
    created = rpc(plain_bridge.url, "CreateTaskPushNotificationConfig", {"taskId": waiting["id"], **push_config(url)})
    assert created["result"]["url"] == url, created


# ---- a config's secrets are write-only --------------------------------------------------------

def rpc03(bridge: InProcessBridge, method: str, params: dict) -> dict:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    return httpx.post(bridge.url + "/", json=body, headers={"A2A-Version": "0.3"}, timeout=30).json()


def assert_no_secrets(answer) -> None:
    text = answer if isinstance(answer, str) else json.dumps(answer)
    assert TOKEN not in text and CREDENTIALS not in text, text


def test_no_answer_shows_a_configs_secrets_over_jsonrpc_and_http_json(allowing_bridge, receiver):
    waiting = rpc(allowing_bridge.url, "SendMessage", {"message": message("ask:which city?")})["result"]["task"]
    created = rpc(allowing_bridge.url, "CreateTaskPushNotificationConfig",
                  {"taskId": waiting["id"], "id": "s-1", **push_config(receiver.url)})["result"]
    assert created["url"] == receiver.url and created["authentication"]["scheme"] == "Bearer"
    answers = [created,
               rpc(allowing_bridge.url, "GetTaskPushNotificationConfig", {"taskId": waiting["id"], "id": "s-1"}),
               rpc(allowing_bridge.url, "ListTaskPushNotificationConfigs", {"taskId": waiting["id"]})]
    rest = f"{allowing_bridge.url}/rest/tasks/{waiting['id']}/pushNotificationConfigs"
    answers += [httpx.get(rest, headers=V1, timeout=10).text, httpx.get(rest + "/s-1", headers=V1, timeout=10).text]
    v03_config = {"id": "s-2", "url": receiver.url, "token": TOKEN,
                  "authentication": {"schemes": ["Bearer"], "credentials": CREDENTIALS}}
    answers += [rpc03(allowing_bridge, "tasks/pushNotificationConfig/set",
                      {"taskId": waiting["id"], "pushNotificationConfig": v03_config}),
                rpc03(allowing_bridge, "tasks/pushNotificationConfig/get",
                      {"id": waiting["id"], "pushNotificationConfigId": "s-1"}),
                rpc03(allowing_bridge, "tasks/pushNotificationConfig/list", {"id": waiting["id"]})]
    for answer in answers:
        assert "error" not in answer and receiver.url in json.dumps(answer), answer
        assert_no_secrets(answer)
    # the webhook still gets them
    follow_up = message("Rome", task_id=waiting["id"], context_id=waiting["contextId"])
    rpc(allowing_bridge.url, "SendMessage", {"message": follow_up})
    wait_until(lambda: receiver.states().count("TASK_STATE_COMPLETED") >= 2, "the completed event at both configs")
    assert {item["headers"]["X-A2A-Notification-Token"] for item in receiver.received} == {TOKEN}
    assert {item["headers"]["Authorization"] for item in receiver.received} == {f"Bearer {CREDENTIALS}"}


def test_no_answer_shows_a_configs_secrets_over_grpc(allowing_bridge, receiver):
    waiting = rpc(allowing_bridge.url, "SendMessage", {"message": message("ask:which city?")})["result"]["task"]

    async def go():
        async with grpc_client(allowing_bridge.url) as client:
            config = TaskPushNotificationConfig(task_id=waiting["id"], id="g-s", url=receiver.url, token=TOKEN)
            config.authentication.scheme, config.authentication.credentials = "Bearer", CREDENTIALS
            created = await client.create_task_push_notification_config(config)
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=waiting["id"], id="g-s"))
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=waiting["id"]))
            return [created, got, *listed.configs]

    for config in asyncio.run(go()):
        assert config.url == receiver.url and config.authentication.scheme == "Bearer"
        assert config.token == "" and config.authentication.credentials == ""


def test_an_open_bridge_says_so_once_it_serves():
    with BridgeProcess() as opened:
        assert OPEN_WARNING in opened.stdout_text().splitlines()
    with BridgeProcess(env={"OVOS_A2A_TOKENS": "a-token"}) as closed:
        lines = closed.stdout_text().splitlines()
    assert "Ctrl-C to stop" in lines[-1] and not any("open:" in line for line in lines), lines
