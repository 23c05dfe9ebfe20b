# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``python -m ovos_a2a_solver.bridge [options]``: the same as ``ovos-a2a serve [options]``."""
import sys

from ovos_a2a_solver.bridge.process.command import main

if __name__ == "__main__":
    sys.exit(main())
