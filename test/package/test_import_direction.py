"""The package's rooms and the direction of their imports, read from the source.

Every ``import`` of every module counts, those inside functions included (an import
deferred for speed is still a dependency), except those under ``if TYPE_CHECKING:``.

* The plugin half (the engine, the client and their private modules), the bridge and the
  RiveScript engine import nothing of each other; what they share are the leaf modules in
  :data:`SHARED`, which import nothing of the package beyond each other.
* Nothing imports the command line (:data:`COMMAND_LINE`) but the command line itself.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import REPO_ROOT

PACKAGE_ROOT = REPO_ROOT / "ovos_a2a_solver"
PACKAGE = "ovos_a2a_solver"
SHARED = {f"{PACKAGE}.{name}" for name in ("states", "version", "persona_config", "jwk", "local_state")}
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
