"""The package's rooms and their imports, read from the source: the graph the import-direction
test checks, and the picture of the house in ``docs/rooms.md``.

Every ``import`` of every module counts, those inside functions included (an import deferred
for speed is still a dependency); those under ``if TYPE_CHECKING:`` count for the circles alone.

    python tools/import_graph.py            # print docs/rooms.md as the code is now
    python tools/import_graph.py --write    # write it
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGE_ROOT = REPO_ROOT / "ovos_a2a_solver"
PACKAGE = "ovos_a2a_solver"
BRIDGE = f"{PACKAGE}.bridge"
RIVESCRIPT = f"{PACKAGE}.rivescript"
PICTURE = REPO_ROOT / "docs" / "rooms.md"

#: the leaf modules every part of the package may import (they import only each other)
SHARED = {f"{PACKAGE}.{name}" for name in ("states", "version", "persona_config", "jwk", "local_state",
                                           "resilience", "trace_context", "credential_headers",
                                           "sentence_units", "setting_specs")}
#: the plugin's defaults and limits, written once: every room of the plugin may import them
PLUGIN_DEFAULTS = f"{PACKAGE}._defaults"
#: plugin room -> the other rooms it may import (a room is a subpackage of the plugin half). Every
#: room may import itself, the plugin's defaults and the shared leaf modules; none imports the
#: faces (the engine, the client) or their own helpers beside them.
PLUGIN_ROOMS = {
    "answers": set(),
    "agent": set(),
    "conversations": {"answers"},
}
#: module names that two modules bear on purpose, with one meaning: the package's own files,
#: and the two OPM chat engines (the plugin's and the RiveScript one)
SHARED_NAMES = {"__init__", "__main__", "engine"}

#: the command line (the package ``cli``, and the demo): it may import every part; nothing imports it
COMMAND_LINE = {f"{PACKAGE}.cli", f"{PACKAGE}.demo"}


def command_line(module: str) -> bool:
    """Whether ``module`` is part of the command line."""
    return module in COMMAND_LINE or module.startswith(f"{PACKAGE}.cli.")

#: bridge room -> the other rooms it may import (a room is a subpackage, or a module directly
#: under bridge/); "cluster.peers" allows that module of the room only. Every room may import
#: itself, the bridge's settings (``config``) and the shared leaf modules.
BRIDGE_ROOMS = {
    "__main__": {"process"},
    # a persona's name names the bridge's own state directory; the database URL is checked as it is set
    "config": {"backends.persona_file", "storage.database_url"},
    "observe": set(),
    "backends": set(),
    "storage": {"observe"},  # a store's failures are logged through observe's throttle
    "cluster": {"storage", "observe"},
    "push": {"storage", "observe"},
    "edge": {"backends", "observe"},
    "turns": {"backends", "storage", "cluster.peers", "observe"},
    "app": {"edge", "turns", "backends", "storage", "push", "cluster", "observe"},
    "process": {"app", "edge", "backends", "storage", "observe"},
}

#: what each room of the picture is, in a few words
ABOUT = {
    "plugin": "the faces: A2AChatEngine, A2AClient",
    "agent": "agent: one remote agent",
    "answers": "answers: events to what is said",
    "conversations": "conversations: what each outcome keeps",
    "shared": "shared leaf modules",
    "command line": "ovos-a2a",
    "rivescript": "the RiveScript engine",
    "process": "process: start, fork, stop",
    "app": "app: wires the rooms",
    "edge": "edge: the request on the wire",
    "turns": "turns: message to persona turn",
    "backends": "backends: what answers",
    "storage": "storage: what survives a crash",
    "push": "push: webhooks",
    "cluster": "cluster: the other processes",
    "observe": "observe: metrics and traces",
    "config": "config: settings",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE_ROOT.rglob("*.py"))}


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(name: str, type_checking: bool = False) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in its body (``type_checking``:
    those under ``if TYPE_CHECKING:`` too)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    skipped: set[int] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if not type_checking and isinstance(node, ast.If) and _type_checking_only(node):
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
        found.update(target for target in targets if target in MODULES)
    found.discard(name)
    return found


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``type_checking``: for type checking too)."""
    return {name: imported_modules(name, type_checking) for name in MODULES}


def half_of(module: str) -> str:
    """Which part of the package a module belongs to, for the rules between them."""
    if module in SHARED or module == PACKAGE:
        return "shared"
    if command_line(module):
        return "command line"
    if module == BRIDGE or module.startswith(BRIDGE + "."):
        return "bridge"
    if module == RIVESCRIPT or module.startswith(RIVESCRIPT + "."):
        return "rivescript"
    return "plugin"


def bridge_room(module: str) -> str:
    """The bridge room of ``module`` ("" for a module outside the rooms)."""
    return module.split(".")[2] if module.startswith(BRIDGE + ".") else ""


def plugin_room(module: str) -> str:
    """The plugin room of ``module`` ("" for a module outside the rooms)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == PACKAGE and parts[1] in PLUGIN_ROOMS else \
        (parts[1] if len(parts) == 2 and parts[1] in PLUGIN_ROOMS else "")


def plugin_room_violations(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The imports of a plugin room that :data:`PLUGIN_ROOMS` does not allow: another room not
    named there, or a module of the plugin outside the rooms (but its defaults)."""
    wrong = set()
    for module, targets in graph.items():
        room = plugin_room(module)
        if not room:
            continue
        for target in targets:
            if half_of(target) != "plugin" or target == PLUGIN_DEFAULTS:
                continue
            if plugin_room(target) not in PLUGIN_ROOMS[room] | {room}:
                wrong.add((module, target))
    return wrong


def alike_names(modules=None) -> dict[str, list[str]]:
    """Module names (a leading ``_`` aside) that more than one module bears, with the modules
    that bear them; :data:`SHARED_NAMES` aside."""
    by_name: dict[str, list[str]] = {}
    for module, path in (MODULES if modules is None else modules).items():
        name = path.stem.lstrip("_") or path.stem
        if path.stem not in SHARED_NAMES:
            by_name.setdefault(name, []).append(module)
    return {name: sorted(found) for name, found in by_name.items() if len(found) > 1}


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
        for target in sorted(graph.get(node, ())):
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


def picture_room(module: str) -> str:
    """The box of ``module`` in the picture: a bridge room, or a part of the package."""
    room = bridge_room(module)
    if room and room != "__main__":
        return room
    if module == PLUGIN_DEFAULTS:
        return "defaults"
    return "process" if room == "__main__" else plugin_room(module) or half_of(module)


def rooms_picture(graph: dict[str, set[str]]) -> str:
    """``docs/rooms.md``: the rooms as boxes, an arrow for each room that imports another."""
    arrows = sorted({(picture_room(module), picture_room(target)) for module, targets in graph.items()
                     for target in targets
                     if picture_room(module) != picture_room(target)
                     and picture_room(target) not in ("shared", "config", "defaults")})
    ids = {room: room.replace(" ", "_") for room in ABOUT}
    bridge = [room for room in ABOUT if room in BRIDGE_ROOMS]
    lines = ["# The house in rooms", "",
             "Generated from the imports of the code by `python tools/import_graph.py --write` (a test checks that",
             "it is current). An arrow means \"imports\". Every room may also import the shared leaf modules",
             f"({', '.join(sorted(m.rsplit('.', 1)[1] + '.py' for m in SHARED))}), every room of the bridge its",
             "settings (`bridge/config.py`) and every room of the plugin its defaults (`_defaults.py`); those",
             "arrows are left out.", "",
             "```mermaid", "flowchart TD"]
    plugin = ["plugin", *PLUGIN_ROOMS]
    lines += [f"    {ids[room]}[\"{ABOUT[room]}\"]" for room in ABOUT
              if room not in bridge + plugin + ["shared"]]
    lines.append("    subgraph plugin_half [\"the plugin: ovos_a2a_solver\"]")
    lines += [f"        {ids[room]}[\"{ABOUT[room]}\"]" for room in plugin]
    lines.append("    end")
    lines.append("    subgraph bridge [\"the bridge: ovos_a2a_solver.bridge\"]")
    lines += [f"        {ids[room]}[\"{ABOUT[room]}\"]" for room in bridge if room != "config"]
    lines.append("    end")
    lines += [f"    {ids[source]} --> {ids[target]}" for source, target in arrows]
    lines += ["```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Draw the package's rooms from its imports.")
    parser.add_argument("--write", action="store_true", help=f"write {PICTURE.relative_to(REPO_ROOT)}")
    args = parser.parse_args(argv)
    picture = rooms_picture(import_graph())
    if args.write:
        PICTURE.write_text(picture)
    else:
        sys.stdout.write(picture)
    return 0


if __name__ == "__main__":
    sys.exit(main())
