"""The package's rooms and the direction of their imports, read from the source.

Every ``import`` of every module counts, those inside functions included (an import
deferred for speed is still a dependency), except those under ``if TYPE_CHECKING:``.

* The plugin half (the engine, the client and their private modules), the bridge and the
  RiveScript engine import nothing of each other; what they share are the leaf modules in
  :data:`SHARED`, which import nothing of the package beyond each other.
* Nothing imports the command line (:data:`COMMAND_LINE`) but the command line itself.
* Inside the bridge, each room imports only the rooms :data:`BRIDGE_ROOMS` allows it (and
  itself, the bridge's settings and the shared leaf modules): ``process -> app -> {edge,
  turns, push}``; ``turns -> {backends, storage, cluster's protocol}``; ``cluster -> storage``,
  never back; nothing under ``bridge/`` imports ``process`` (but ``python -m``'s ``__main__``).
* No import circle, hidden or not.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import REPO_ROOT

PACKAGE_ROOT = REPO_ROOT / "ovos_a2a_solver"
PACKAGE = "ovos_a2a_solver"
SHARED = {f"{PACKAGE}.{name}" for name in ("states", "version", "persona_config", "jwk", "local_state",
                                                 "resilience")}
COMMAND_LINE = {f"{PACKAGE}.cli", f"{PACKAGE}.demo"}
BRIDGE = f"{PACKAGE}.bridge"
RIVESCRIPT = f"{PACKAGE}.rivescript"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(name: str) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its body."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    skipped: set[int] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking_only(node):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target in MODULES:
                found.add(target)
    found.discard(name)
    return found


GRAPH = {name: imported_modules(name) for name in MODULES}


def half_of(module: str) -> str:
    """Which room of the package a module belongs to, for the rules between them."""
    if module in SHARED or module == PACKAGE:
        return "shared"
    if module in COMMAND_LINE:
        return "command line"
    if module == BRIDGE or module.startswith(BRIDGE + "."):
        return "bridge"
    if module == RIVESCRIPT or module.startswith(RIVESCRIPT + "."):
        return "rivescript"
    return "plugin"


def test_the_check_reads_imports_inside_functions():
    # the bridge's command imports its server inside a function: a check that missed
    # function bodies would not see it
    assert any(target.startswith(BRIDGE) for target in GRAPH[f"{PACKAGE}.cli"])


@pytest.mark.parametrize("room", ["plugin", "bridge", "rivescript"])
def test_a_room_imports_only_itself_and_the_shared_leaf_modules(room):
    crossings = {(module, target) for module, targets in GRAPH.items() if half_of(module) == room
                 for target in targets if half_of(target) not in (room, "shared")}
    assert crossings == set()


def test_the_shared_leaf_modules_import_only_each_other():
    crossings = {(module, target) for module in SHARED for target in GRAPH[module] if target not in SHARED}
    assert crossings == set()


def test_nothing_imports_the_command_line():
    importers = {(module, target) for module, targets in GRAPH.items() if module not in COMMAND_LINE
                 for target in targets if target in COMMAND_LINE}
    assert importers == set()
#: bridge room -> the other rooms it may import (a room is a subpackage, or a module directly
#: under bridge/); "cluster.peers" allows that module of the room only
BRIDGE_ROOMS = {
    "__main__": {"process"},
    "config": set(),
    "backends": set(),
    "storage": set(),
    "cluster": {"storage"},
    "push": {"storage"},
    "edge": {"backends"},
    "turns": {"backends", "storage", "cluster.peers"},
    "app": {"edge", "turns", "backends", "storage", "push", "cluster"},
    "process": {"app", "edge", "backends", "storage"},
}


def bridge_room(module: str) -> str:
    return module.split(".")[2] if module.startswith(BRIDGE + ".") else ""


def room_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The imports between rooms of the bridge that :data:`BRIDGE_ROOMS` does not allow."""
    wrong = set()
    for module, targets in graph.items():
        room = bridge_room(module)
        if not room:
            continue
        allowed = BRIDGE_ROOMS[room] | {room, "config"}
        for target in targets:
            other = bridge_room(target)
            leaf = ".".join(target.split(".")[2:4])
            if other and other not in allowed and leaf not in allowed:
                wrong.add((module, target))
    return wrong


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


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_the_circle_finder_finds_a_circle():
    assert import_circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    # a package imports its own __init__ implicitly; only module-to-module imports count
    graph = {module: {t for t in targets if MODULES[t].name != "__init__.py"} for module, targets in GRAPH.items()}
    assert import_circles(graph) == []
