# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What each outcome of a turn keeps: the sessions' conversations with each agent
(:mod:`.conversation_store`), the one table of what an outcome or an error leaves of a conversation
(:mod:`.effects`), and the tasks that outlived their turn (:mod:`.outliving`, which reads them
through a narrow protocol of its client, ``OutlivingClient``).

It imports the answers' room (an outliving task's answer is assembled there) and the shared
leaf modules; nothing of the agent's room.
"""
