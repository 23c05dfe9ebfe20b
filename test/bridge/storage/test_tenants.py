"""Bridge: tasks are kept per caller AND per tenant, on every binding.

Two Bearer tokens and two tenants give four owners. A task is found only by its own owner:
to any other (another caller, or the same caller under another tenant) it does not exist
(TaskNotFound), whether it is read, listed, cancelled, subscribed to, continued or replayed.
JSON-RPC sends the tenant in the request, HTTP+JSON in the path (``/rest/{tenant}/...``),
gRPC in the request; gRPC is served only without credentials, so there it is one caller
with two tenants.
"""
from __future__ import annotations

import asyncio
import itertools
import uuid

import httpx
import pytest
from a2a.types import (CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role, SendMessageRequest,
                       TaskState)
from a2a.utils.errors import TaskNotFoundError

from support.bridge_in_process import InProcessBridge
from support.bridge_rpc import grpc_client, message


TOKENS = ("tenant-test-Ab3", "tenant-test-Cd4")
TENANTS = ("north", "south")
TASK_NOT_FOUND = -32001


class Owner:
    """One (token, tenant) over JSON-RPC or HTTP+JSON."""

    def __init__(self, bridge: InProcessBridge, token: str, tenant: str, binding: str) -> None:
        self.base, self.tenant, self.binding = bridge.url, tenant, binding
        self.headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {token}"}

    def __repr__(self) -> str:
        return f"{self.binding}:{self.headers['Authorization'][-3:]}@{self.tenant}"

    def _rpc(self, method: str, params: dict) -> dict:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "tenant": self.tenant}}
        return httpx.post(self.base + "/", json=body, headers=self.headers, timeout=30).json()

    def _rest(self, verb: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        response = httpx.request(verb, f"{self.base}/rest/{self.tenant}{path}", json=body, headers=self.headers,
                                 timeout=30)
        return response.status_code, response.json()

    def _call(self, method: str, params: dict, verb: str, path: str, body: dict | None = None):
        """(result, None) or (None, the JSON-RPC error code / HTTP status), over this owner's binding."""
        if self.binding == "jsonrpc":
            reply = self._rpc(method, params)
            return (reply["result"], None) if "result" in reply else (None, reply["error"]["code"])
        status, reply = self._rest(verb, path, body)
        return (reply, None) if status == 200 else (None, status)

    def send(self, msg: dict) -> tuple[dict | None, int | None]:
        """(task, None) or (None, the JSON-RPC error code / HTTP status)."""
        result, error = self._call("SendMessage", {"message": msg}, "POST", "/message:send", {"message": msg})
        return (result["task"], None) if result is not None else (None, error)

    def get(self, task_id: str):
        return self._call("GetTask", {"id": task_id}, "GET", f"/tasks/{task_id}")

    def cancel(self, task_id: str):
        return self._call("CancelTask", {"id": task_id}, "POST", f"/tasks/{task_id}:cancel")

    def listed(self) -> set[str]:
        if self.binding == "jsonrpc":
            return {t["id"] for t in self._rpc("ListTasks", {"pageSize": 100})["result"]["tasks"]}
        status, body = self._rest("GET", "/tasks?pageSize=100")
        assert status == 200, body
        return {t["id"] for t in body.get("tasks", [])}

    def subscribe_error(self, task_id: str):
        if self.binding == "jsonrpc":
            body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id,
                                                                                     "tenant": self.tenant}}
            response = httpx.post(self.base + "/", json=body, headers=self.headers, timeout=30)
            return response.json()["error"]["code"]
        response = httpx.post(f"{self.base}/rest/{self.tenant}/tasks/{task_id}:subscribe", headers=self.headers,
                              timeout=30)
        return response.status_code


NOT_FOUND = {"jsonrpc": TASK_NOT_FOUND, "rest": 404}


@pytest.fixture(scope="module")
def two_token_bridge():
    """An echo bridge that takes two Bearer tokens: with two tenants, four owners."""
    with InProcessBridge(env={"OVOS_A2A_TOKENS": ",".join(TOKENS)}) as process:
        yield process


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_two_callers_and_two_tenants_never_reach_each_others_tasks(two_token_bridge, binding):
    owners = [Owner(two_token_bridge, token, tenant, binding) for token, tenant in itertools.product(TOKENS, TENANTS)]
    asked = {}
    for owner in owners:
        msg = message("ask:which city?")
        task, error = owner.send(msg)
        assert error is None and task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", (owner, error)
        asked[owner] = (task, msg)
    for owner, other in itertools.permutations(owners, 2):
        task, msg = asked[other]
        not_found = NOT_FOUND[binding]
        assert owner.get(task["id"])[1] == not_found, (owner, other)
        assert owner.cancel(task["id"])[1] == not_found, (owner, other)
        assert task["id"] not in owner.listed(), (owner, other)
        assert owner.subscribe_error(task["id"]) == not_found, (owner, other)
        follow_up = message("Paris", task_id=task["id"], context_id=task["contextId"])
        assert owner.send(follow_up)[1] == not_found, (owner, other)
    for owner in owners:  # every owner's task is untouched, and its own follow-up continues it
        task, msg = asked[owner]
        assert owner.get(task["id"])[0]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert task["id"] in owner.listed()
        done, error = owner.send(message("Lisbon", task_id=task["id"], context_id=task["contextId"]))
        assert error is None and done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_a_message_id_replayed_under_another_tenant_is_work_of_its_own(two_token_bridge, binding):
    north, south = (Owner(two_token_bridge, TOKENS[0], tenant, binding) for tenant in TENANTS)
    msg = message("remember the code 1234")
    first, _ = north.send(msg)
    again, _ = north.send(msg)
    elsewhere, _ = south.send(msg)
    assert again["id"] == first["id"]  # a replay in the same scope rejoins the first delivery
    assert elsewhere["id"] != first["id"]
    recall, _ = south.send(message("recall", context_id=first["contextId"]))
    assert "".join(p["text"] for a in recall["artifacts"] for p in a["parts"]) == "I remember nothing."


def test_over_grpc_one_caller_with_two_tenants_keeps_them_apart():
    with InProcessBridge("--grpc-port", "0") as bridge:
        async def go():
            async with grpc_client(bridge.url) as client:
                msg = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text="hello north")])
                events = [e async for e in client.send_message(SendMessageRequest(message=msg, tenant="north"))]
                task = events[0].task
                assert task.status.state == TaskState.TASK_STATE_COMPLETED
                assert (await client.get_task(GetTaskRequest(id=task.id, tenant="north"))).id == task.id
                with pytest.raises(TaskNotFoundError):
                    await client.get_task(GetTaskRequest(id=task.id, tenant="south"))
                with pytest.raises(TaskNotFoundError):
                    await client.cancel_task(CancelTaskRequest(id=task.id, tenant="south"))
                listed = await client.list_tasks(ListTasksRequest(tenant="south", page_size=100))
                assert task.id not in {t.id for t in listed.tasks}
                listed = await client.list_tasks(ListTasksRequest(tenant="north", page_size=100))
                assert task.id in {t.id for t in listed.tasks}

        asyncio.run(go())
