# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""The RiveScript engine: the second OPM ChatEngine of this package (plugin id
``ovos-a2a-rivescript``), which answers the embedded offline persona.

* :mod:`.engine`: ``RiveScriptChatEngine``, what OPM loads (cheap to import);
* :mod:`.memory`: RiveScript's session manager, one bounded, expiring memory per conversation;
* :mod:`.session_file`: the SQLite file that keeps those memories across restarts;
* ``brain/``: the small-talk brain it answers from by default.

It is a plugin of its own: it imports nothing of the bridge, which only names it in the
embedded persona.
"""
