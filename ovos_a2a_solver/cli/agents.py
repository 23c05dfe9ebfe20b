# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""Which agent a command talks to, and with which credentials: the URL as typed (a scheme
added: http on loopback, https elsewhere), the credentials of the flags and the environment,
and the client for them."""
from __future__ import annotations

import base64
import os

from ovos_a2a_solver.bridge.config import is_loopback
from ovos_a2a_solver.cli.output import CommandError, Output


def basic_header(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def credentials_for(url: str, args, env=os.environ) -> tuple[str | None, str | None]:
    """``(auth header or None, a note to show)`` for contacting ``url``.

    ``--auth`` and ``--password`` are for the URL on the command line. The environment's
    ``A2A_CLIENT_AUTH`` (a header, as ``--auth`` takes it) or else ``A2A_CLIENT_PASSWORD``
    goes only to the origin of ``A2A_CLIENT_PEER_URL``: any other agent is contacted
    anonymously, and the note says so. (The environment keeps a credential off the command
    line, where every user of the machine sees it.)
    """
    from ovos_a2a_solver.agent.credentials import origin_of

    user = getattr(args, "user", None) or env.get("A2A_CLIENT_USER") or "a2a"
    if getattr(args, "auth", None):
        return args.auth, None
    if getattr(args, "password", None):
        return basic_header(user, args.password), None
    header, password, peer = env.get("A2A_CLIENT_AUTH"), env.get("A2A_CLIENT_PASSWORD"), env.get("A2A_CLIENT_PEER_URL")
    if not header and not password:
        return None, None
    variable = "A2A_CLIENT_AUTH" if header else "A2A_CLIENT_PASSWORD"
    target = origin_of(url)
    if peer and target is not None and origin_of(peer) == target:
        return header or basic_header(user, password), None
    where = f"{target[0]}://{target[1]}:{target[2]}" if target else url
    if not peer:
        return None, f"{variable} is set but A2A_CLIENT_PEER_URL is not: contacting {where} anonymously"
    return None, f"{variable} is only for {peer}: contacting {where} anonymously"


def oauth2_credentials(args, env=os.environ):
    """``(Credentials or None, token origins)`` from ``--oauth2-client``, ``--oauth2-secret``
    (or ``A2A_CLIENT_OAUTH2_SECRET``) and ``--oauth2-token-origin``, for the URL on the
    command line: sent when its card requires an OAuth2 client-credentials flow; the client id
    alone (a public client) signs the person in when it asks for a device-code flow."""
    from ovos_a2a_solver.agent.credentials import Credentials, token_origins_of

    client = getattr(args, "oauth2_client", None)
    secret = getattr(args, "oauth2_secret", None) or (env.get("A2A_CLIENT_OAUTH2_SECRET") if client else None)
    origins = tuple(getattr(args, "oauth2_token_origin", None) or ())
    if secret and not client:
        raise CommandError("--oauth2-secret (or A2A_CLIENT_OAUTH2_SECRET) needs --oauth2-client", 2)
    try:
        token_origins_of(origins)
    except ValueError as exc:
        raise CommandError(f"--oauth2-token-origin: {str(exc).partition(': ')[2]}", 2) from None
    return (Credentials(oauth2_client_id=client, oauth2_client_secret=secret or None) if client else None), origins


def agent_url(raw: str) -> tuple[str, str | None]:
    """``(the URL to use, a note to show or None)`` for what was typed.

    ``localhost:8337/a2a`` and ``host:port`` are accepted: http on loopback, https
    elsewhere (the note says which). A port that is not a number from 1 to 65535 is an
    error of its own.
    """
    from urllib.parse import urlsplit

    url, note = raw.strip(), None
    if "://" not in url:
        host = urlsplit("//" + url).hostname or ""
        scheme = "http" if is_loopback(host) else "https"
        url = f"{scheme}://{url}"
        note = f"no scheme in {raw!r}: using {url}" + (" (http on loopback)" if scheme == "http" else "")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise CommandError(f"agent URL must start with http:// or https://, not {parts.scheme}://: {raw!r}", 2)
    if not parts.hostname:
        raise CommandError(f"agent URL has no host: {raw!r}", 2)
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    if parts.netloc.rpartition("@")[2].rpartition("]")[2].count(":") and not port.isdigit():
        raise CommandError(f"bad port in {raw!r}: {port!r} is not a number" if port
                           else f"bad port in {raw!r}: nothing after the colon", 2)
    if port and not 1 <= int(port) <= 65535:
        raise CommandError(f"bad port in {raw!r}: {int(port)} is not between 1 and 65535", 2)
    return url, note


def looks_like_url(text: str | None) -> bool:
    """Whether ``text`` reads as an agent's address (``http://…``, ``host:port…``, a dotted host,
    ``localhost``) rather than as words to send."""
    from urllib.parse import urlsplit

    text = (text or "").strip()
    if not text or any(c.isspace() for c in text):
        return False
    if "://" in text:
        return True
    try:
        host = urlsplit("//" + text).hostname or ""
    except ValueError:
        return False
    return ":" in text.split("/", 1)[0] or "." in host.strip(".") or host == "localhost"


def open_client(args, out: Output, conversations=None, streaming: bool = False, on_sign_in=None):
    """The client of the agent on the command line, with the device's store of sign-ins (shared
    with the plugin); ``on_sign_in`` hears each step of one (``cli.signing_in.SignInSteps``)."""
    from ovos_a2a_solver.agent.tokens import TokenStore
    from ovos_a2a_solver.client import A2AClient

    if not getattr(args, "url_checked", False):
        args.url, note = agent_url(args.url)
        args.url_checked = True
        if note:
            out.note(note)
    auth, note = credentials_for(args.url, args)
    if note:
        out.note(note)
    oauth2, token_origins = oauth2_credentials(args)
    return A2AClient(args.url, auth_header=auth, timeout=args.timeout, streaming=streaming,
                     conversations=conversations, credentials=oauth2, oauth2_token_origins=token_origins,
                     tokens=TokenStore.default(), on_sign_in=on_sign_in)
