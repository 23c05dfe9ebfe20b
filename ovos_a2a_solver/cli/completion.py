# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""``ovos-a2a completion bash|zsh``: a shell completion script, made from the command line's
own parser (so it names every command and flag there is, and the choices of those that have
some). Words that are no flag (URLs, files) are left to the shell's own completion."""
from __future__ import annotations

import argparse

BASH = """\
# ovos-a2a completion for bash: eval "$(ovos-a2a completion bash)" in ~/.bashrc, or save it as
# ~/.local/share/bash-completion/completions/ovos-a2a
_ovos_a2a() {{
    local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} words=""
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        words="{commands}"
    else
        case "${{COMP_WORDS[1]}} $prev" in
{choices}
        esac
        if [ -z "$words" ] && [[ "$cur" == -* ]]; then
            case "${{COMP_WORDS[1]}}" in
{flags}
            esac
        elif [ -z "$words" ] && [[ "$prev" != -* ]]; then
            case "${{COMP_WORDS[1]}}" in
{positionals}
            esac
        fi
    fi
    [ -n "$words" ] && COMPREPLY=($(compgen -W "$words" -- "$cur"))
    return 0
}}
complete -o default -F _ovos_a2a ovos-a2a
"""

ZSH = """\
#compdef ovos-a2a
# ovos-a2a completion for zsh: eval "$(ovos-a2a completion zsh)" in ~/.zshrc (zsh runs bash's
# completion functions through bashcompinit)
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
"""


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's own parser, by name."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:  # argparse keeps no public list of its sub-commands
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` for ``shell`` (``bash`` or ``zsh``)."""
    commands = commands_of(parser)
    choices, flags, positionals = [], [], []
    for name, command in commands.items():
        options = sorted({o for a in command._actions for o in a.option_strings})
        flags.append(f'                {name}) words="{" ".join(options)}" ;;')
        for action in command._actions:
            if action.choices and not action.option_strings:
                positionals.append(f'                {name}) words="{" ".join(map(str, action.choices))}" ;;')
            if action.choices and action.option_strings:
                for option in action.option_strings:
                    choices.append(f'            "{name} {option}") words="{" ".join(map(str, action.choices))}" ;;')
    top = " ".join([*commands, "--help", "--version"])
    bash = BASH.format(commands=top, choices="\n".join(choices) or "            *) ;;", flags="\n".join(flags),
                       positionals="\n".join(positionals) or "                *) ;;")
    return bash if shell == "bash" else ZSH + bash
