# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""How a failed command explains itself in one line: what to pass for a credential the agent
wants, how to see a task that outlived the command, and any other error in words."""
from __future__ import annotations

from ovos_a2a_solver.cli.output import CommandError


def still_working_hint(exc: BaseException, args) -> str:
    """For a task that outlived the command's timeout: how to see it later."""
    from ovos_a2a_solver._errors import StillWorkingError

    task_id = exc.task_id if isinstance(exc, StillWorkingError) else ""
    return f" (see it later: ovos-a2a status {args.url} {task_id})" if task_id and getattr(args, "url", "") else ""


def unauthorized(exc: BaseException, args) -> str | None:
    """For an HTTP 401: a line that names the flags and the schemes the agent's card declares."""
    from ovos_a2a_solver._failures import http_status

    if http_status(exc) != 401:
        return None
    url = getattr(args, "url", "")
    schemes = ""
    try:
        from ovos_a2a_solver.client import A2AClient
        with A2AClient(url, timeout=min(5.0, getattr(args, "timeout", 5.0) or 5.0)) as client:
            declared = list(client.fetch_agent_card().security_schemes)
        schemes = f"; its card declares: {', '.join(declared)}" if declared else "; its card declares no scheme"
    except Exception:  # the card itself may need the credential
        pass
    given = getattr(args, "auth", None) or getattr(args, "password", None)
    what = "refused the credential given" if given else "wants a credential (HTTP 401)"
    return (f"{url} {what}{schemes}: pass --auth \"Bearer TOKEN\" (or \"Header-Name: value\"), "
            f"or --password for HTTP Basic (user --user, default a2a)")


def missing_credential(exc: BaseException) -> str | None:
    """For a card whose security requirements no credential given fits: its words, and the flags."""
    from ovos_a2a_solver._errors import MissingCredentialError

    if not isinstance(exc, MissingCredentialError):
        return None
    return (f"{exc}; on the command line pass --auth \"Bearer TOKEN\" (or \"Header-Name: value\"), "
            f"--password for HTTP Basic (user --user, default a2a), or --oauth2-client and --oauth2-secret for "
            f"OAuth2 client credentials (--oauth2-token-origin for a token endpoint on another origin)")


def one_line(exc: BaseException) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    name = type(exc).__name__
    return message if isinstance(exc, (CommandError, ValueError)) else f"{name}: {message}"
