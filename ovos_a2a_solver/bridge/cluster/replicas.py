# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Several bridge processes (replicas) on one PostgreSQL database, behind one URL.

What a replica needs from the others, and how it gets it:

* Tasks, their versions and their live events: the bridge's PostgreSQL task store and
  event stream (``storage.postgres``). Any replica reads, lists and subscribes to any task;
  a subscriber on B reads the events A appends to the shared event log when A rings.
* Cancel: the SDK alone would record ``canceled`` on B while A's persona goes on talking.
  Here B asks A to stop the turn: it writes the request into ``a2a_bridge_cancels`` and
  rings the doorbell (see below); A claims it, stops the turn, the SDK on A records
  ``canceled``, and A writes its answer into the same row and rings. B waits a bounded
  time (``handler.REPLICA_ANSWER_MARGIN`` more than the cancel grace), then refuses the
  cancel as not cancelable.
* Leases: each run of a replica (its boot id) holds a row in ``a2a_bridge_replicas`` and
  renews it every third of ``replica_lease`` seconds; the row says when it expires, by the
  database's clock (so the replicas' clocks do not matter, and each replica's own lease
  applies to it). A replica that finds an expired row takes it over with one atomic
  ``UPDATE`` (of several survivors exactly one wins) and fails that run's unfinished work,
  without waiting for it to restart; then the row says ``lost``. The take-over holds a
  lease of the taker's until then: if failing the work breaks off (the database went away,
  the taker died), the take-over expires and is taken over again. A run that shuts down
  gracefully marks its row ``stopped``. The sweep for stranded tasks (once a lease) leaves the
  work of live runs, expired or not, and of runs being taken over to the take-over: such a
  run's tasks say its lease expired, whichever replica looks first.
* The shared event log is pruned: the events of tasks that ended ``EVENTS_KEPT`` seconds
  ago are deleted (the store appends, and deletes only with a task).

The doorbell: a PostgreSQL ``NOTIFY`` on :data:`CHANNEL`, with an empty payload, which
every replica ``LISTEN``\\s to. It carries nothing and proves nothing: any role that may
connect to the database may listen on any channel and notify on it, so what a replica
says to another (task ids, owners, boot ids, answers) is kept in tables the bridge's role
owns, and a ring only makes each replica read the rows addressed to it. A forged ring
costs one read; the reads of one replica are one at a time, rings meanwhile make one more,
so a flood of rings costs a replica at most one read in flight. A ring is lost if nobody
listens: a replica that listens again (its connection came back) reads at once; a cancel
whose ring was lost gets no answer and is refused as not cancelable, the honest answer.
"""
from __future__ import annotations

import asyncio
import enum
import logging
import uuid
from collections.abc import AsyncIterator, Callable

from a2a.types import TaskState

from ovos_a2a_solver.bridge.cluster.peers import LocalTurns, PeerUnreachable
from ovos_a2a_solver.bridge.observe.metrics import NO_METRICS, Metrics
from ovos_a2a_solver.bridge.storage.claim import StoreTaken
from ovos_a2a_solver.bridge.storage.operations import Operation, OperationLog
from ovos_a2a_solver.bridge.storage.postgres import make_leases_table
from ovos_a2a_solver.states import TERMINAL

LOG = logging.getLogger("ovos_a2a_solver.bridge")

CHANNEL = "ovos_a2a_bridge"   # the doorbell: NOTIFY with an empty payload, every replica listens


class LeaseState(str, enum.Enum):
    """Where a run's lease stands (the ``state`` column of ``a2a_bridge_replicas``)."""

    LIVE = "live"                # held and renewed
    TAKING_OVER = "taking-over"  # expired, being taken over (for a lease of the taker's: if the taker
    #                              fails or dies first, another replica takes it over again)
    LOST = "lost"                # taken over: its work was failed
    STOPPED = "stopped"          # ended at shutdown


FORGET_AFTER = 86400.0        # seconds after which rows of ended runs are deleted
EVENTS_KEPT = 600.0           # seconds the shared event log keeps the events of a task that ended
PRUNE_EVERY = 60.0            # seconds between two prunings of the event log by one replica
TERMINAL_NAMES = tuple(TaskState.Name(state) for state in TERMINAL)


class CancelState(str, enum.Enum):
    """Where a cancel request between runs stands (the ``state`` column of ``a2a_bridge_cancels``)."""

    ASKED = "asked"          # written by the asking run
    STOPPING = "stopping"    # claimed by the run doing the task
    ANSWERED = "answered"    # answered by it (the refusal, or none)


NOW = "EXTRACT(EPOCH FROM clock_timestamp())"  # the database's clock, in seconds

#: the leases' table, ``a2a_bridge_replicas``, is the task store's (``storage.postgres``): every
#: write of a task is fenced by its writer's lease there
SCHEMA = (
    # cancel requests between runs: ``runner`` is the run doing the task, ``asker`` the run
    # waiting for the answer (until ``expires``, by the database's clock)
    """CREATE TABLE IF NOT EXISTS a2a_bridge_cancels (
        request VARCHAR(32) PRIMARY KEY, asker VARCHAR(32) NOT NULL, runner VARCHAR(32) NOT NULL,
        task_id VARCHAR(255) NOT NULL, owner TEXT NOT NULL, state VARCHAR(16) NOT NULL, refusal TEXT,
        expires DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS ix_a2a_bridge_cancels_runner ON a2a_bridge_cancels (runner, state)",
    "CREATE INDEX IF NOT EXISTS ix_a2a_bridge_cancels_asker ON a2a_bridge_cancels (asker, state)",
)
#: the boot ids of the runs whose work the take-over fails, not the sweep for stranded tasks: those
#: live (an expired lease included: it awaits its take-over) or being taken over
RUNS_NOT_SWEPT = (f"SELECT boot FROM a2a_bridge_replicas "
                  f"WHERE state IN ('{LeaseState.LIVE.value}', '{LeaseState.TAKING_OVER.value}')")
#: rings the doorbell once the statement it is the tail of changed a row (``changed``)
RING = f"SELECT pg_notify('{CHANNEL}', '') FROM changed"

class ReplicaGroup:
    """This replica's membership: its lease, the others' leases, and cancel requests between them."""

    relays_streams = False  # the shared event log carries every replica's events
    metrics: Metrics = NO_METRICS  # what the leases are counted in (the bridge's, when metrics are on)
    keeps_parked_tasks = True  # the shared event log keeps a parked task up to date
    gives_up_turns = True  # when its lease ends unrenewed

    def __init__(self, db, operations: OperationLog, lease: float, persona: str,
                 notices: dict[str, Callable[[str | None], None]] | None = None, store=None) -> None:
        self.db = db                    # a PostgresDatabase
        # the task store whose writes are fenced by this run's lease (a PostgresTaskStore)
        self.store = store
        # other channels listened to on the same connection: channel -> what hears each payload
        # (a hint: any role may notify), and None when notices may have been missed
        self.notices = dict(notices or {})
        self.operations = operations
        self.lease = lease
        self.persona = persona          # whom this replica serves: replicas of another are refused
        self._driver = None             # the asyncpg connection that LISTENs (the database's own)
        self._answers: dict[str, asyncio.Future] = {}
        self._jobs: set[asyncio.Task] = set()
        self._renewer: asyncio.Task | None = None
        self._rung = asyncio.Event()    # the doorbell rang since the last read
        self._reader: asyncio.Task | None = None
        self._here: LocalTurns | None = None
        self._epoch = 0                 # the epoch of the lease this run holds
        self._held_until = 0.0          # the loop's time until which the lease surely holds
        self._lapse: asyncio.TimerHandle | None = None  # gives the lease up at ``_held_until``
        self._giving_up: asyncio.Task | None = None  # the lease is over: its turns are being given up
        self._swept_at = float("-inf")  # the loop's time of the last sweep: none yet

    @property
    def boot(self) -> str:
        return self.operations.boot

    @property
    def lease_held(self) -> bool:
        """Whether this run surely holds its lease for a while yet: renewed within the last two
        thirds of it. Past that (the database did not answer the renewals) the replica takes no
        message and says so on ``/health``, before its lease can expire and be taken over."""
        return asyncio.get_running_loop().time() < self._held_until - self.lease / 3

    def unavailable(self) -> str | None:
        """Why this replica takes no message now, or None."""
        if self.lease_held:
            return None
        return "This replica cannot reach its task store to renew its lease; retry on another replica or later."

    async def start(self, here: LocalTurns) -> None:
        """Create the table, take this run's lease, listen, and keep renewing (and watching
        the others) in the background."""
        self._here = here
        await make_leases_table(self.db)
        for statement in SCHEMA:
            await self.db.execute(statement)
        if self.store is not None:
            self.store.fenced = True  # from now on a write without this run's lease changes nothing
        await self._refuse_another_persona()
        await self._take_lease()
        loop = asyncio.get_running_loop()
        self._reader = loop.create_task(self._answer_the_door())
        await self._listen()
        self._renewer = loop.create_task(self._keep_renewing())

    async def stop(self) -> None:
        """Stop listening and renewing; mark this run's lease ``stopped`` (at shutdown, once
        its unfinished work was failed)."""
        if self._lapse is not None:
            self._lapse.cancel()
        for background in (self._renewer, self._reader, self._giving_up):
            if background is not None:
                background.cancel()
                await asyncio.gather(background, return_exceptions=True)
        for job in list(self._jobs):
            job.cancel()
        await asyncio.gather(*self._jobs, return_exceptions=True)
        await self._unlisten()
        await self.db.execute("UPDATE a2a_bridge_replicas SET state = :stopped WHERE boot = :boot",
                              {"stopped": LeaseState.STOPPED, "boot": self.boot})

    # ---- leases ----------------------------------------------------------------------------------

    async def _refuse_another_persona(self) -> None:
        """Raise :class:`StoreTaken` while a live replica serves another persona on this
        database: its tasks would be continued by the wrong persona. (Leases written before
        replicas named their persona are taken for this one's.)"""
        others = await self.db.fetch(
            f"SELECT replica, persona FROM a2a_bridge_replicas WHERE state = :live AND expires > {NOW} "
            f"AND persona IS NOT NULL AND persona <> :persona AND boot <> :boot LIMIT 1",
            {"live": LeaseState.LIVE, "persona": self.persona, "boot": self.boot})
        if others:
            raise StoreTaken(f'the database is in use by a replica of another persona ("{others[0]["persona"]}" on '
                             f'{others[0]["replica"]}): replicas share a database only when they serve one persona; '
                             f'give this bridge its own database with --db URL (or stop those replicas)')

    async def _take_lease(self) -> None:
        """Take this run's lease, in a new epoch: writes made under an earlier one change nothing."""
        sent = asyncio.get_running_loop().time()
        rows = await self.db.fetch(
            f"INSERT INTO a2a_bridge_replicas (boot, replica, state, expires, persona, epoch) VALUES (:boot, "
            f":replica, :live, {NOW} + :lease, :persona, 1) ON CONFLICT (boot) DO UPDATE SET state = :live, "
            f"expires = excluded.expires, epoch = a2a_bridge_replicas.epoch + 1 RETURNING epoch",
            {"boot": self.boot, "replica": self.operations.replica, "live": LeaseState.LIVE, "lease": self.lease,
             "persona": self.persona})
        self._epoch = rows[0]["epoch"]
        if self.store is not None:
            self.store.lease = (self.boot, self._epoch)
        self._giving_up = None
        self._hold_until(sent + self.lease)

    def _hold_until(self, until: float) -> None:
        """The lease surely holds until ``until`` (the loop's time): it is given up then by this
        run's own clock (:meth:`_give_up`), unless renewed before."""
        self._held_until = until
        if self._lapse is not None:
            self._lapse.cancel()
        self._lapse = asyncio.get_running_loop().call_at(until, self._give_up)

    def _give_up(self) -> None:
        """The lease is over (unrenewed by its end, by this run's own clock, or found expired by
        a renewal): nothing this run writes changes a task from now on, so its running turns are
        given up at once (their callers answered "unavailable, retry shortly": on another replica,
        which fails their tasks once the lease expired in the database too), without waiting for
        the database to say so: it may be out of reach."""
        if self._giving_up is not None:
            return
        if self._lapse is not None:
            self._lapse.cancel()
        self.metrics.lease_renewal("lost")
        LOG.error("this replica's lease expired (it could not renew it for %g s): its running turns are given "
                  "up, and their tasks failed; it takes a new lease and serves again", self.lease)
        if self.store is not None:
            self.store.lease = None  # nothing of the lost lease's turns is written from now on
        self._giving_up = asyncio.get_running_loop().create_task(self._give_up_turns())

    async def _give_up_turns(self) -> None:
        try:
            given_up = await self._here.give_up_turns()
        except Exception as exc:  # noqa: BLE001 - the lease is taken again all the same
            LOG.warning("could not give up the turns of the expired lease (%s)", exc)
            return
        if given_up:
            LOG.warning("gave up %d turn(s) of the expired lease", given_up)

    async def renew(self) -> None:
        """Renew this run's lease, within a third of it. A lease that ended meanwhile (the
        database was away, or this process stalled, for longer than the lease) is over, whether
        or not another replica took it over: the turns running here are given up (:meth:`_give_up`:
        another replica fails their tasks, or the sweep for stranded tasks does), and a lease is
        taken again in a new epoch, so that nothing those turns still write changes a task."""
        sent = asyncio.get_running_loop().time()
        if self._giving_up is None:
            renewed = await asyncio.wait_for(self.db.execute(
                f"UPDATE a2a_bridge_replicas SET expires = {NOW} + :lease WHERE boot = :boot AND epoch = :epoch "
                f"AND state = :live AND expires > {NOW}",
                {"lease": self.lease, "boot": self.boot, "epoch": self._epoch, "live": LeaseState.LIVE}),
                self.lease / 3)
            if renewed and self._giving_up is None:  # (not ended by this run's clock while it was renewed)
                self.metrics.lease_renewal("renewed")
                self._hold_until(sent + self.lease)
                return
            self._give_up()
        await asyncio.shield(self._giving_up)
        await self._take_lease()

    async def take_over_expired(self) -> int:
        """Claim every other run whose lease (or whose take-over) expired, atomically: one
        replica wins each. Fail its unfinished work, then record it lost. Return how many
        tasks were failed. An error while failing them leaves the claim to expire."""
        claimed = await self.db.fetch(
            f"UPDATE a2a_bridge_replicas SET state = :taking, expires = {NOW} + :lease "
            f"WHERE state IN (:live, :taking) AND expires < {NOW} AND boot <> :boot RETURNING boot, replica",
            {"taking": LeaseState.TAKING_OVER, "live": LeaseState.LIVE, "lease": self.lease, "boot": self.boot})
        failed = 0
        for row in claimed:
            count = await self._here.fail_lost(await self.operations.running_in(row["boot"]))
            await self.db.execute("UPDATE a2a_bridge_replicas SET state = :lost WHERE boot = :boot AND state = :taking",
                                  {"lost": LeaseState.LOST, "boot": row["boot"], "taking": LeaseState.TAKING_OVER})
            LOG.warning("replica %s stopped renewing its lease: %d of its task(s) failed", row["replica"], count)
            self.metrics.took_over(count)
            failed += count
        return failed

    async def prune_event_log(self) -> int:
        """Delete the shared event log's entries of tasks that ended more than
        :data:`EVENTS_KEPT` seconds ago. A subscriber tails a task only until it ends, so
        nobody reads them any more; return how many. The a2a-sdk's event log, where an
        earlier version of the bridge kept them, is pruned alike while it exists."""
        present = (await self.db.fetch("SELECT to_regclass('bridge_task_events') IS NOT NULL AS bridge, "
                                       "to_regclass('task_events') IS NOT NULL AND to_regclass('tasks') IS NOT NULL "
                                       "AS sdk"))[0]
        pruned = 0
        if present["bridge"]:
            terminal = ", ".join(str(int(state)) for state in sorted(TERMINAL))
            pruned += await self.db.execute(
                f"DELETE FROM bridge_task_events e USING bridge_tasks t WHERE e.task_id = t.id "
                f"AND t.state IN ({terminal}) AND e.at < now() - make_interval(secs => :kept)", {"kept": EVENTS_KEPT})
        if present["sdk"]:
            sdk_terminal = ", ".join(f"'{name}'" for name in TERMINAL_NAMES)
            pruned += await self.db.execute(
                f"DELETE FROM task_events e USING tasks t WHERE e.task_id = t.id AND t.status->>'state' IN "
                f"({sdk_terminal}) AND t.last_updated < (now() AT TIME ZONE 'UTC') - make_interval(secs => :kept)",
                {"kept": EVENTS_KEPT})
        return pruned

    async def sweep_stranded(self) -> int:
        """Fail the tasks still submitted or working that no run works on (see
        ``LocalTurns.fail_stranded``); at most once a lease. Return how many.

        The work of a run that is live, its lease expired or not, or being taken over is the
        take-over's (:meth:`take_over_expired`), which fails it saying its replica's lease expired:
        whichever replica sweeps first, it leaves that work alone. Only the rest (the runs that
        stopped, or were taken over, and those with no lease row) is the sweep's."""
        loop = asyncio.get_running_loop()
        if loop.time() - self._swept_at < self.lease:
            return 0
        self._swept_at = loop.time()
        return await self._here.fail_stranded(RUNS_NOT_SWEPT, self.lease)

    async def _keep_renewing(self) -> None:
        every = self.lease / 3
        loop = asyncio.get_running_loop()
        pruned_at = loop.time()
        while True:
            await asyncio.sleep(every)
            try:
                if loop.time() - pruned_at >= PRUNE_EVERY:
                    pruned_at = loop.time()
                    await self.prune_event_log()
                await self.renew()
                if self._driver is None or self._driver.is_closed():
                    await self._listen()  # the database went away and came back: listen again
                await self.db.execute(
                    f"DELETE FROM a2a_bridge_replicas WHERE state <> :live AND expires < {NOW} - :forget",
                    {"live": LeaseState.LIVE, "forget": FORGET_AFTER})
                await self.db.execute(  # requests whose asker died before it removed them
                    f"DELETE FROM a2a_bridge_cancels WHERE expires < {NOW} - :lease", {"lease": self.lease})
            except Exception as exc:  # the database is unreachable: try again at the next round
                self.metrics.lease_renewal("error")
                LOG.warning("could not renew this replica's lease (%s); retrying", exc)
                continue
            try:
                await self.take_over_expired()
            except Exception as exc:  # the claim expires, and the lost run is taken over again
                LOG.warning("could not fail the work of a replica that stopped renewing its lease (%s); "
                            "it is taken over again in %g s", exc, self.lease)
            try:
                await self.sweep_stranded()
            except Exception as exc:  # the next round sweeps again
                LOG.warning("could not sweep for stranded tasks (%s); trying again in %g s", exc, self.lease)

    # ---- cancel requests -------------------------------------------------------------------------

    async def ask_to_cancel(self, operation: Operation, timeout: float) -> str | None:
        """Ask the run doing ``operation`` to stop its task's turn; ``None`` once it stopped
        (and recorded ``canceled``), else the reason it could not. Raises
        :class:`PeerUnreachable` after ``timeout`` seconds without an answer."""
        request = uuid.uuid4().hex
        answer = asyncio.get_running_loop().create_future()
        self._answers[request] = answer
        try:
            await self.db.fetch(
                f"WITH changed AS (INSERT INTO a2a_bridge_cancels (request, asker, runner, task_id, owner, state, "
                f"expires) VALUES (:request, :asker, :runner, :task, :owner, :asked, {NOW} + :timeout) RETURNING 1) "
                + RING,
                {"request": request, "asker": self.boot, "runner": operation.boot, "task": operation.task_id,
                 "owner": operation.owner, "asked": CancelState.ASKED, "timeout": timeout})
            return await asyncio.wait_for(answer, timeout)
        except asyncio.TimeoutError:
            raise PeerUnreachable(operation.replica) from None
        finally:
            self._answers.pop(request, None)
            if not answer.done():  # an answered request was removed when its answer was read
                await self.db.execute("DELETE FROM a2a_bridge_cancels WHERE request = :request",
                                      {"request": request})

    def follow(self, operation: Operation) -> AsyncIterator:
        """Not needed between replicas: the shared event log carries the events of every
        replica's tasks (``relays_streams`` is False)."""
        raise NotImplementedError("replicas share live events through the shared event log")

    async def _answer_cancel(self, request: dict) -> None:
        try:
            refusal = await self._here.cancel_here(request["task_id"], request["owner"])
        except Exception as exc:  # never leave the asking replica waiting for nothing
            refusal = f"the replica working on it failed to stop it: {type(exc).__name__}"
        await self.db.fetch(
            "WITH changed AS (UPDATE a2a_bridge_cancels SET state = :answered, refusal = :refusal "
            "WHERE request = :request AND state = :stopping RETURNING 1) " + RING,
            {"answered": CancelState.ANSWERED, "refusal": refusal, "request": request["request"],
             "stopping": CancelState.STOPPING})

    async def _read_requests(self) -> None:
        """Read what is addressed to this run, in one statement: claim the cancel requests
        for its tasks (each is answered in the background), and take the answers to its own
        requests."""
        rows = await self.db.fetch(
            f"WITH asked AS (UPDATE a2a_bridge_cancels SET state = :stopping WHERE runner = :boot AND state = :asked "
            f"AND expires > {NOW} RETURNING request, task_id, owner, state, refusal), "
            f"answered AS (DELETE FROM a2a_bridge_cancels WHERE asker = :boot AND state = :answered "
            f"RETURNING request, task_id, owner, state, refusal) "
            f"SELECT * FROM asked UNION ALL SELECT * FROM answered",
            {"stopping": CancelState.STOPPING, "boot": self.boot, "asked": CancelState.ASKED,
             "answered": CancelState.ANSWERED})
        for row in rows:
            if row["state"] == CancelState.STOPPING:
                job = asyncio.get_running_loop().create_task(self._answer_cancel(row))
                self._jobs.add(job)
                job.add_done_callback(self._jobs.discard)
                continue
            answer = self._answers.get(row["request"])
            if answer is not None and not answer.done():
                answer.set_result(row["refusal"])

    async def _answer_the_door(self) -> None:
        """Read at every ring, one read at a time: rings during a read make one more."""
        while True:
            await self._rung.wait()
            self._rung.clear()
            try:
                await self._read_requests()
            except Exception as exc:  # the database is unreachable: the next ring (or listen) reads again
                LOG.warning("could not read the requests of the other replicas (%s)", exc)

    def _received(self, _connection, _pid, _channel, _payload: str) -> None:
        """A ring: whatever its payload (any role may notify), read the tables."""
        self._rung.set()

    async def _listen(self) -> None:
        """LISTEN on the database's own listening connection (``PostgresDatabase.listen``), held
        for the life of the run."""
        await self._unlisten()
        self._driver = await self.db.listen(CHANNEL, self._received)
        for channel in self.notices:
            await self.db.listen(channel, self._noticed)
        self._rung.set()  # rings made while nobody listened were lost: read now
        for hear in self.notices.values():
            hear(None)  # and so were the notices

    def _noticed(self, _connection, _pid, channel: str, payload: str) -> None:
        self.notices[channel](payload)

    async def _unlisten(self) -> None:
        self._driver = None
        await self.db.unlisten(CHANNEL, self._received)
        for channel in self.notices:
            await self.db.unlisten(channel, self._noticed)
