"""What ``ovos-solver-failure-plugin`` says when no brain answered: its ``no_brain.dialog``
lines in every locale it ships, and its bare ``404`` fallback.

An answer in this set came from the failure plugin, not from the handler a test meant.
"""
from __future__ import annotations

from pathlib import Path


def no_brain_lines() -> frozenset[str]:
    """Every line the failure plugin can answer with (read from the installed plugin)."""
    import ovos_solver_failure_plugin

    locale = Path(ovos_solver_failure_plugin.__file__).resolve().parent / "locale"
    lines = {"404"}
    for dialog in locale.glob("*/no_brain.dialog"):
        lines.update(line.strip() for line in dialog.read_text(encoding="utf-8").splitlines()
                     if line.strip() and not line.startswith("#"))
    assert "404 brain not found" in lines, f"the failure plugin's dialogs were not found under {locale}"
    return frozenset(lines)


NO_BRAIN_LINES = no_brain_lines()
