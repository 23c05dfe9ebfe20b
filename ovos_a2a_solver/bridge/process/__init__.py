# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""How a bridge process starts, forks and stops: the command (:mod:`.command`), what is
checked and prepared before serving (:mod:`.startup`), :func:`~.serve.serve`, which serves
as one process (:mod:`.one_process`) or as the supervisor of ``--workers`` (:mod:`.workers`).

Nothing else under ``bridge/`` imports it (but ``python -m ovos_a2a_solver.bridge``).
"""
