# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""What answers: the protocols a backend implements and the typed outputs it may yield
(:mod:`.protocols`), a real persona (:mod:`.persona`) and the file it is built from
(:mod:`.persona_file`, which the settings read too), and the scripted backends for tests and
benchmarks (:mod:`.echo`) and for the A2A conformance kit (:mod:`.scenarios`).

It imports nothing else of the bridge.
"""
