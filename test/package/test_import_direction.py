"""The package's rooms and the direction of their imports, read from the source.

Every ``import`` of every module counts, those inside functions included (an import
deferred for speed is still a dependency); those under ``if TYPE_CHECKING:`` count for the
circles alone.

* The plugin half (the engine, the client and their rooms), the bridge and the RiveScript
  engine import nothing of each other; what they share are the leaf modules in
  :data:`~import_graph.SHARED`, which import nothing of the package.
* Inside the plugin, each room imports only the rooms :data:`~import_graph.PLUGIN_ROOMS` allows
  it (and itself, the plugin's defaults and the shared leaf modules): ``conversations ->
  answers``; ``agent`` and ``answers`` import no other room; no room imports the faces.
* Nothing imports the command line (:data:`~import_graph.COMMAND_LINE`) but the command line itself.
* Inside the bridge, each room imports only the rooms :data:`~import_graph.BRIDGE_ROOMS` allows it (and
  itself, the bridge's settings and the shared leaf modules): ``process -> app -> {edge,
  turns, push}``; ``turns -> {backends, storage, cluster's protocol}``; ``cluster -> storage``,
  never back; nothing under ``bridge/`` imports ``process`` (but ``python -m``'s ``__main__``).
* No import circle, hidden or not: not even through imports made for type checking alone.
* No two modules bear one name (a leading ``_`` aside) with two meanings.
"""
from __future__ import annotations

import pytest

from support import REPO_ROOT, load_tool

#: ``tools/import_graph.py``: the reader of the imports, the rules and the picture
graph_tool = load_tool("import_graph")
PACKAGE, BRIDGE, SHARED = graph_tool.PACKAGE, graph_tool.BRIDGE, graph_tool.SHARED
BRIDGE_ROOMS, MODULES = graph_tool.BRIDGE_ROOMS, graph_tool.MODULES
half_of, bridge_room, room_violations = graph_tool.half_of, graph_tool.bridge_room, graph_tool.room_violations
import_circles = graph_tool.import_circles
PLUGIN_ROOMS, plugin_room = graph_tool.PLUGIN_ROOMS, graph_tool.plugin_room
plugin_room_violations, alike_names = graph_tool.plugin_room_violations, graph_tool.alike_names


@pytest.fixture(scope="module")
def graph() -> dict:
    """The package's imports (module -> the modules it imports), read once by the worker that runs
    these tests (not at collection, by every worker)."""
    return graph_tool.import_graph()


@pytest.fixture(scope="module")
def graph_for_type_checking() -> dict:
    """The package's imports, those made for type checking alone included."""
    return graph_tool.import_graph(type_checking=True)


def test_the_check_reads_imports_inside_functions(graph):
    # the bridge's command imports serve() inside its run(): a check that missed function
    # bodies would not see it
    assert f"{BRIDGE}.process.serve" in graph[f"{BRIDGE}.process.command"]


@pytest.mark.parametrize("room", ["plugin", "bridge", "rivescript"])
def test_a_room_imports_only_itself_and_the_shared_leaf_modules(room, graph):
    crossings = {(module, target) for module, targets in graph.items() if half_of(module) == room
                 for target in targets if half_of(target) not in (room, "shared")}
    assert crossings == set()


def test_the_shared_leaf_modules_import_nothing_of_the_package(graph_for_type_checking):
    imports = {(module, target) for module in SHARED for target in graph_for_type_checking[module]}
    assert imports == set()


def test_nothing_imports_the_command_line(graph):
    importers = {(module, target) for module, targets in graph.items() if not graph_tool.command_line(module)
                 for target in targets if graph_tool.command_line(target)}
    assert importers == set()


def test_every_room_of_the_bridge_has_a_rule():
    assert {bridge_room(module) for module in MODULES if bridge_room(module)} == set(BRIDGE_ROOMS)


def test_each_room_of_the_bridge_imports_only_what_its_rule_allows(graph):
    assert room_violations(graph) == set()


def test_the_room_rules_catch_a_wrong_import():
    storage, turns = f"{BRIDGE}.storage.tasks", f"{BRIDGE}.turns.handler"
    replicas, peers, process = f"{BRIDGE}.cluster.replicas", f"{BRIDGE}.cluster.peers", f"{BRIDGE}.process.serve"
    assert room_violations({storage: {turns}, turns: {peers, storage}, f"{BRIDGE}.edge.wire": {process}}) == \
        {(storage, turns), (f"{BRIDGE}.edge.wire", process)}
    assert room_violations({turns: {replicas}}) == {(turns, replicas)}  # only the cluster's protocol


def test_every_room_of_the_plugin_has_a_rule():
    assert {plugin_room(module) for module in MODULES if plugin_room(module)} == set(PLUGIN_ROOMS)


def test_each_room_of_the_plugin_imports_only_what_its_rule_allows(graph):
    assert plugin_room_violations(graph) == set()


def test_the_plugin_room_rules_catch_a_wrong_import():
    assembler, connection = f"{PACKAGE}.answers.assembler", f"{PACKAGE}.agent.connection"
    outliving, store = f"{PACKAGE}.conversations.outliving", f"{PACKAGE}.conversations.conversation_store"
    client, defaults = f"{PACKAGE}.client", f"{PACKAGE}._defaults"
    assert plugin_room_violations({assembler: {connection, "ovos_a2a_solver.states"},
                                   outliving: {assembler, store, client},
                                   connection: {defaults, outliving}}) == \
        {(assembler, connection), (outliving, client), (connection, outliving)}


def test_the_circle_finder_finds_a_circle():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles(graph):
    # a package imports its own __init__ implicitly; only module-to-module imports count
    own_modules = {module: {t for t in targets if MODULES[t].name != "__init__.py"}
                   for module, targets in graph.items()}
    assert import_circles(own_modules) == []


def test_no_import_circles_even_for_type_checking(graph_for_type_checking):
    own_modules = {module: {t for t in targets if MODULES[t].name != "__init__.py"}
                   for module, targets in graph_for_type_checking.items()}
    assert import_circles(own_modules) == []


def test_the_type_checking_graph_reads_imports_made_for_type_checking_alone(graph_for_type_checking, graph):
    # the card cache names the signature checks for type checking only: the graph for circles must see it
    cards, signatures = f"{PACKAGE}.agent.cards", f"{PACKAGE}.agent.signatures"
    assert signatures in graph_for_type_checking[cards] and signatures not in graph[cards]


def test_no_two_modules_are_named_alike():
    assert alike_names() == {}


def test_the_name_check_finds_two_modules_named_alike():
    modules = {f"{PACKAGE}._wire": REPO_ROOT / "ovos_a2a_solver" / "_wire.py",
               f"{BRIDGE}.edge.wire": REPO_ROOT / "ovos_a2a_solver" / "bridge" / "edge" / "wire.py",
               f"{BRIDGE}.edge.__init__": REPO_ROOT / "ovos_a2a_solver" / "bridge" / "edge" / "__init__.py",
               f"{PACKAGE}.__init__": REPO_ROOT / "ovos_a2a_solver" / "__init__.py"}
    assert alike_names(modules) == {"wire": [f"{PACKAGE}._wire", f"{BRIDGE}.edge.wire"]}


def test_the_picture_of_the_rooms_is_current(graph):
    """docs/rooms.md is drawn from the imports as they are (``python tools/import_graph.py --write``)."""
    assert graph_tool.PICTURE.read_text() == graph_tool.rooms_picture(graph)
