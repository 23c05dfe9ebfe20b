"""Bridge replicas on PostgreSQL: the doorbells carry nothing, and a neighbour cannot ring them.

Any role that may connect to a PostgreSQL database may LISTEN and NOTIFY on any channel. Here a
neighbour role with nothing but the right to connect (on a PostgreSQL server of the test's own)
listens on the bridge's channels while a webhook is registered, and rings them as fast as it
can while subscribers wait on another replica:

* it hears no task id (no payload names anything);
* its rings make the replicas read nothing: they spend about as much CPU during the flood as
  without it (the subscribers' own reads, once a second), and a webhook registered on one
  replica is still used by the other.
"""
from __future__ import annotations

import asyncio
import json
import os
import threading
import time

import httpx
import pytest

from support.bridge_process import BridgeProcess
from support.bridge_rpc import OwnerCalls, message, state
from support.postgres import run_on
from support.postgres_server import PostgresServer, postgres_bin
from support.waiting import wait_until
from support.webhooks import Webhook, quick

pytestmark = pytest.mark.skipif(postgres_bin() is None and not os.environ.get("CI"),
                                reason="needs PostgreSQL's server programs (initdb, pg_ctl)")

TOKEN = "doorbell-owner-3Fq8z"
CHANNELS = ("ovos_a2a_bridge", "ovos_a2a_bridge_events", "ovos_a2a_bridge_push_configs")
SUBSCRIBERS = 6
FLOOD_SECONDS = 4.0
MOST_CPU_PER_1000_RINGS = 0.04  # seconds of the replicas' CPU


class Neighbour:
    """A role with nothing but CONNECT, listening on the bridge's channels and ringing them."""

    def __init__(self, server: PostgresServer) -> None:
        self.password = "neighbour-pw-9d"
        run_on(server.url(), f"CREATE ROLE neighbour LOGIN PASSWORD '{self.password}'")
        self.dsn = f"postgresql://neighbour:{self.password}@127.0.0.1:{server.port}/{server.database}"
        self.heard: list[tuple[str, str]] = []   # (channel, payload) of the rings the bridge sent
        self.own: set[int] = set()                # the sessions the neighbour rings from
        self.rung = 0

    async def listen(self, until: asyncio.Event) -> None:
        import asyncpg

        connection = await asyncpg.connect(self.dsn)
        try:
            for channel in CHANNELS:
                await connection.add_listener(channel, self._heard)
            await until.wait()
        finally:
            await connection.close()

    def _heard(self, _connection, pid: int, channel: str, payload: str) -> None:
        if pid not in self.own:
            self.heard.append((channel, payload))

    async def flood(self, seconds: float) -> None:
        import asyncpg

        connection = await asyncpg.connect(self.dsn)
        self.own.add(connection.get_server_pid())
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                await connection.execute("SELECT pg_notify('ovos_a2a_bridge_events', ''), "
                                         "pg_notify('ovos_a2a_bridge', 'x'), pg_notify('ovos_a2a_bridge_push_configs', "
                                         "'forged')")
                self.rung += 3
        finally:
            await connection.close()


def cpu_seconds(*bridges: BridgeProcess) -> float:
    """The CPU time the bridges' processes have used so far (user and system)."""
    total = 0
    for bridge in bridges:
        fields = open(f"/proc/{bridge.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def subscribe(caller: OwnerCalls, task_id: str, ready: threading.Event) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    with httpx.stream("POST", caller.url, json=body, timeout=60,
                      headers={**caller.headers, "Accept": "text/event-stream"}) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                ready.set()


def test_a_neighbour_role_hears_no_task_id_and_its_rings_cost_the_replicas_nothing():
    with PostgresServer() as server:
        neighbour = Neighbour(server)
        env = {"OVOS_A2A_TOKENS": TOKEN, "OVOS_A2A_PUSH_ALLOW": "127.0.0.1"}
        with BridgeProcess("--db", server.url(), env={**env, "OVOS_A2A_REPLICA": "bell-a"}) as a, \
                BridgeProcess("--db", server.url(), env={**env, "OVOS_A2A_REPLICA": "bell-b"}) as b:
            doer, other = OwnerCalls(a, TOKEN), OwnerCalls(b, TOKEN)
            loop = asyncio.new_event_loop()
            stop = asyncio.Event()
            listening = threading.Thread(target=loop.run_until_complete, args=(neighbour.listen(stop),), daemon=True)
            listening.start()
            hook = Webhook(quick)
            try:
                asked = other.send(message("ask:Which city?"))
                assert state(asked) == "TASK_STATE_INPUT_REQUIRED", asked
                doer.task("CreateTaskPushNotificationConfig", {"taskId": asked["id"], "url": hook.url, "id": "c1"})
                wait_until(lambda: neighbour.heard, "the neighbour to hear the webhook's notice")

                # subscribers on B to tasks worked on A, quiet for the length of the flood
                threads = []
                for _ in range(SUBSCRIBERS):
                    task = doer.send(message(f"sleep:{FLOOD_SECONDS + 4}"), blocking=False)
                    ready = threading.Event()
                    thread = threading.Thread(target=subscribe, args=(other, task["id"], ready), daemon=True)
                    thread.start()
                    assert ready.wait(30), "a subscription did not begin"
                    threads.append(thread)
                quiet_before = cpu_seconds(a, b)
                time.sleep(FLOOD_SECONDS)
                quiet = cpu_seconds(a, b) - quiet_before
                flood_before = cpu_seconds(a, b)
                asyncio.run(neighbour.flood(FLOOD_SECONDS))
                flooded = cpu_seconds(a, b) - flood_before

                done = other.send(message("Paris", task_id=asked["id"], context_id=asked["contextId"]))
                assert state(done) == "TASK_STATE_COMPLETED", done
                wait_until(lambda: asked["id"] in hook.completed, "the webhook registered on A to get B's event")
            finally:
                hook.close()
                loop.call_soon_threadsafe(stop.set)
                listening.join(10)
    told = [payload for _channel, payload in neighbour.heard if payload]
    assert not told, f"a neighbour role heard payloads on the bridge's channels: {told[:5]}"
    assert asked["id"] not in json.dumps(neighbour.heard), "a neighbour role learnt a task id"
    assert neighbour.rung > 1000, f"the flood rang only {neighbour.rung} times"
    print(f"{neighbour.rung} forged rings: {flooded:.2f} s of the replicas' CPU, {quiet:.2f} s without them")
    # a ring heard costs each subscriber a read (about 0.1 s of CPU for 1,000 rings here); one dropped, a look-up
    assert flooded - quiet <= MOST_CPU_PER_1000_RINGS * neighbour.rung / 1000 + 0.1, (
        f"{neighbour.rung} forged rings cost the two replicas {flooded:.2f} s of CPU in {FLOOD_SECONDS:g} s, against "
        f"{quiet:.2f} s in as long without them")


def test_a_flood_from_one_sender_while_it_is_looked_up_is_heard_once_a_channel():
    """Rings that come while their sender is being looked up are not kept one by one: once the
    look-up says the sender is the bridge's own, each channel is heard once, however many came."""
    from ovos_a2a_solver.bridge.storage.postgres import RingSenders

    heard: list[str] = []

    async def scenario() -> None:
        answer = asyncio.get_running_loop().create_future()

        async def of_this_role(_pid: int) -> bool:
            return await answer

        senders = RingSenders(of_this_role, lambda _c, _pid, channel, _payload: heard.append(channel))
        for n in range(10_000):
            senders.heard(None, 4242, CHANNELS[n % 2], "")
        await asyncio.sleep(0)
        answer.set_result(True)
        for _ in range(3):
            await asyncio.sleep(0)
        senders.heard(None, 4242, CHANNELS[0], "")  # known now: heard at once

    asyncio.run(scenario())
    assert sorted(heard[:-1]) == sorted(CHANNELS[:2]), f"{len(heard)} rings heard"
    assert heard[-1] == CHANNELS[0]
