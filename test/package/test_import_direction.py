"""The package's rooms and the direction of their imports, read from the source.

Every ``import`` of every module counts, those inside functions included (an import
deferred for speed is still a dependency), except those under ``if TYPE_CHECKING:``.

* The plugin half (the engine, the client and their private modules), the bridge and the
  RiveScript engine import nothing of each other; what they share are the leaf modules in
  :data:`~import_graph.SHARED`, which import nothing of the package beyond each other.
* Nothing imports the command line (:data:`~import_graph.COMMAND_LINE`) but the command line itself.
* Inside the bridge, each room imports only the rooms :data:`~import_graph.BRIDGE_ROOMS` allows it (and
  itself, the bridge's settings and the shared leaf modules): ``process -> app -> {edge,
  turns, push}``; ``turns -> {backends, storage, cluster's protocol}``; ``cluster -> storage``,
  never back; nothing under ``bridge/`` imports ``process`` (but ``python -m``'s ``__main__``).
* No import circle, hidden or not.
"""
from __future__ import annotations

import importlib.util

import pytest

from support import REPO_ROOT


def _load_import_graph():
    """``tools/import_graph.py``: the reader of the imports, the rules and the picture."""
    spec = importlib.util.spec_from_file_location("import_graph", REPO_ROOT / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


graph_tool = _load_import_graph()
PACKAGE, BRIDGE, SHARED = graph_tool.PACKAGE, graph_tool.BRIDGE, graph_tool.SHARED
BRIDGE_ROOMS, MODULES = graph_tool.BRIDGE_ROOMS, graph_tool.MODULES
half_of, bridge_room, room_violations = graph_tool.half_of, graph_tool.bridge_room, graph_tool.room_violations
import_circles = graph_tool.import_circles
GRAPH = graph_tool.import_graph()


def test_the_check_reads_imports_inside_functions():
    # the bridge's command imports serve() inside its run(): a check that missed function
    # bodies would not see it
    assert f"{BRIDGE}.process.serve" in GRAPH[f"{BRIDGE}.process.command"]


@pytest.mark.parametrize("room", ["plugin", "bridge", "rivescript"])
def test_a_room_imports_only_itself_and_the_shared_leaf_modules(room):
    crossings = {(module, target) for module, targets in GRAPH.items() if half_of(module) == room
                 for target in targets if half_of(target) not in (room, "shared")}
    assert crossings == set()


def test_the_shared_leaf_modules_import_only_each_other():
    crossings = {(module, target) for module in SHARED for target in GRAPH[module] if target not in SHARED}
    assert crossings == set()


def test_nothing_imports_the_command_line():
    importers = {(module, target) for module, targets in GRAPH.items() if not graph_tool.command_line(module)
                 for target in targets if graph_tool.command_line(target)}
    assert importers == set()


def test_every_room_of_the_bridge_has_a_rule():
    assert {bridge_room(module) for module in MODULES if bridge_room(module)} == set(BRIDGE_ROOMS)


def test_each_room_of_the_bridge_imports_only_what_its_rule_allows():
    assert room_violations(GRAPH) == set()


def test_the_room_rules_catch_a_wrong_import():
    storage, turns = f"{BRIDGE}.storage.tasks", f"{BRIDGE}.turns.handler"
    replicas, peers, process = f"{BRIDGE}.cluster.replicas", f"{BRIDGE}.cluster.peers", f"{BRIDGE}.process.serve"
    assert room_violations({storage: {turns}, turns: {peers, storage}, f"{BRIDGE}.edge.wire": {process}}) == \
        {(storage, turns), (f"{BRIDGE}.edge.wire", process)}
    assert room_violations({turns: {replicas}}) == {(turns, replicas)}  # only the cluster's protocol


def test_the_circle_finder_finds_a_circle():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    # a package imports its own __init__ implicitly; only module-to-module imports count
    graph = {module: {t for t in targets if MODULES[t].name != "__init__.py"} for module, targets in GRAPH.items()}
    assert import_circles(graph) == []


def test_the_picture_of_the_rooms_is_current():
    """docs/rooms.md is drawn from the imports as they are (``python tools/import_graph.py --write``)."""
    assert graph_tool.PICTURE.read_text() == graph_tool.rooms_picture(GRAPH)
