# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``python -m ovos_a2a_solver.cli``: the ``ovos-a2a`` command."""
import sys

from ovos_a2a_solver.cli import main

sys.exit(main())
