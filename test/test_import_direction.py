"""The plugin half and the bridge stand apart: neither imports the other, except the one
shared vocabulary of task states (``ovos_a2a_solver.states``), the version, the typed
reading of a persona's config block that both OPM engines use, and the keys of signed cards
(``ovos_a2a_solver.jwk``: the bridge signs, the plugin checks); the library never imports
its command line."""
import json
import subprocess
import sys

import pytest

SHARED = {"ovos_a2a_solver", "ovos_a2a_solver.states", "ovos_a2a_solver.version", "ovos_a2a_solver.persona_config",
          "ovos_a2a_solver.jwk"}
COMMAND_LINE = {"ovos_a2a_solver.cli", "ovos_a2a_solver.demo"}


def loaded_by(module: str) -> set[str]:
    """The modules of this package that importing ``module`` loads, in a fresh interpreter."""
    code = (f"import sys, json, {module}; "
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith('ovos_a2a_solver'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("module", ["ovos_a2a_solver.bridge.app", "ovos_a2a_solver.bridge.server",
                                    "ovos_a2a_solver.bridge.rivescript_engine"])
def test_the_bridge_loads_nothing_of_the_plugin_nor_the_command_line(module):
    loaded = loaded_by(module)
    outside = {m for m in loaded if not m.startswith("ovos_a2a_solver.bridge")} - SHARED
    assert outside == set(), f"importing {module} loaded {sorted(outside)}"


@pytest.mark.parametrize("module", ["ovos_a2a_solver.engine", "ovos_a2a_solver.client"])
def test_the_plugin_loads_nothing_of_the_bridge_nor_the_command_line(module):
    loaded = loaded_by(module)
    assert {m for m in loaded if m.startswith("ovos_a2a_solver.bridge")} == set()
    assert loaded & COMMAND_LINE == set()
