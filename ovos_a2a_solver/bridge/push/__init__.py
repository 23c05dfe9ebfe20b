# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Push notifications: where a webhook may point, and the delivery of task events to it
(:mod:`.delivery`).
"""
