# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Push notifications: where a webhook may point (:mod:`.guard`), and the delivery of task
events to it (:mod:`.delivery`). The configs themselves are stored in
:mod:`..storage.push_configs`.
"""
