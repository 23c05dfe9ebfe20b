# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What survives a crash: the database (:mod:`.database`, its URL :mod:`.database_url`, which the
settings check; PostgreSQL for replicas in
:mod:`.postgres`, with what both share in :mod:`.rows`), the task stores (:mod:`.tasks`),
whose a task is (:mod:`.owners`), the ids of tasks not saved yet (:mod:`.new_tasks`), the
settled ends that finished turns wait for (:mod:`.stored_ends`), one task read or settled
outside the a2a-sdk's event flow (:mod:`.stored_task`), the operation log that makes a message idempotent (:mod:`.operations`), the webhook configs
(:mod:`.push_configs`), every way the work a run left unfinished is failed
(:mod:`.lost_work`), and the task rows that cannot be read, for the operator
(:mod:`.unreadable`).

It imports nothing else of the bridge.
"""
