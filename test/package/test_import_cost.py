"""OPM imports every plugin module when any persona is built: importing ours must stay cheap."""
import json
import subprocess
import sys

import pytest

HEAVY = ["a2a", "grpc", "httpx", "google.protobuf", "rivescript"]  # rivescript: when the engine is built


@pytest.mark.parametrize("module", ["ovos_a2a_solver", "ovos_a2a_solver.engine",
                                    "ovos_a2a_solver.rivescript.engine"])
def test_importing_the_plugin_loads_no_protocol_stack(module):
    code = (f"import sys, json, {module}; "
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize("plugin_id, target", [
    ("ovos-a2a-solver", "ovos_a2a_solver.engine:A2AChatEngine"),
    ("ovos-a2a-rivescript", "ovos_a2a_solver.rivescript.engine:RiveScriptChatEngine"),
])
def test_the_plugins_are_registered_for_opm(plugin_id, target):
    from importlib.metadata import entry_points
    (ep,) = [e for e in entry_points(group="opm.agents.chat") if e.name == plugin_id]
    assert ep.value == target
