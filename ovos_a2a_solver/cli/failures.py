# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""How a failed command explains itself in one line: what to pass for a credential the agent
wants, how to see a task that outlived the command, and any other error in words."""
from __future__ import annotations

from ovos_a2a_solver.cli.output import CommandError


def still_working_hint(exc: BaseException, args) -> str:
    """For a task that outlived the command's timeout: how to see it later."""
    from ovos_a2a_solver.agent.exceptions import StillWorkingError

    task_id = exc.task_id if isinstance(exc, StillWorkingError) else ""
    return f" (see it later: ovos-a2a status {args.url} {task_id})" if task_id and getattr(args, "url", "") else ""


def unauthorized(exc: BaseException, args) -> str | None:
    """For an HTTP 401: a line that names the flags and the schemes the agent's card declares."""
    from ovos_a2a_solver.agent.request_failures import http_status

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
    from ovos_a2a_solver.agent.exceptions import MissingCredentialError

    if not isinstance(exc, MissingCredentialError):
        return None
    return (f"{exc}; on the command line pass --auth \"Bearer TOKEN\" (or \"Header-Name: value\"), "
            f"--password for HTTP Basic (user --user, default a2a), --oauth2-client and --oauth2-secret for "
            f"OAuth2 client credentials, or --oauth2-client alone to sign in on another device "
            f"(--oauth2-token-origin for a token endpoint on another origin)")


def no_answer(exc: BaseException) -> str | None:
    """For a turn the agent ended without a word: its words, without the error's name."""
    from ovos_a2a_solver.agent.exceptions import NoAnswerError

    return str(exc) if isinstance(exc, NoAnswerError) else None


def _causes(exc: BaseException):
    """``exc`` and the exceptions it was raised from, outermost first."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def unreachable(exc: BaseException, args) -> str | None:
    """For an agent that cannot be reached: what to check, in words, instead of the
    network library's ("All connection attempts failed", "[SSL: WRONG_VERSION_NUMBER]")."""
    import ssl
    import socket
    from urllib.parse import urlsplit

    url = getattr(args, "url", "") or ""
    parts = urlsplit(url)
    for cause in _causes(exc):
        text = str(cause)
        if isinstance(cause, ssl.SSLError) or "WRONG_VERSION_NUMBER" in text or "wrong version number" in text:
            if parts.scheme == "https" and ("WRONG_VERSION_NUMBER" in text or "wrong version number" in text):
                return f"{parts.netloc} answers without TLS: try http://{url.split('://', 1)[1]}"
            return f"the TLS connection to {parts.netloc} failed: {' '.join(text.split())}"
        if isinstance(cause, socket.gaierror) or "Name or service not known" in text \
                or "nodename nor servname" in text:
            return f"cannot find the host {parts.hostname!r} of {url}: check the URL"
        if isinstance(cause, ConnectionRefusedError) or "All connection attempts failed" in text \
                or "Connection refused" in text:
            return f"nothing answers at {url}: is the agent running there?"
    return None


def unknown_task(exc: BaseException, args) -> str | None:
    """For a task the agent does not know (``status``, ``cancel``): one wording for both."""
    from a2a.utils.errors import TaskNotFoundError

    task_id = getattr(args, "task_id", None)
    if not isinstance(exc, TaskNotFoundError) or not task_id:
        return None
    return f"{args.url} knows no task {task_id} (of yours): ovos-a2a tasks {args.url} lists them"


def one_line(exc: BaseException) -> str:
    message = " ".join(str(exc).split()) or type(exc).__name__
    name = type(exc).__name__
    return message if isinstance(exc, (CommandError, ValueError)) else f"{name}: {message}"
