# Copyright 2026 OpenVoiceOS contributors
# SPDX-License-Identifier: Apache-2.0
"""OAuth2 tokens: what a token endpoint answers (:func:`token_request`), and the tokens people
signed in for, kept per agent and person on this device (:class:`TokenStore`).

A person's tokens are theirs: the store keeps them as the conversation store keeps
conversations (one JSON file, mode 0600, in the user's private state directory,
``$XDG_STATE_HOME/ovos_a2a_solver/sign_ins.json``; see ``local_state.SharedJsonFile``), or in
memory only. They are kept under a key that names the person (the agent's conversation key and
the session: each device, each satellite), the authorization server and the client, so one
person's sign-in never answers for another's. Whose turn a request is made for is
:func:`person` (set with :func:`for_person` around the turn).
"""
from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from a2a.client import A2AClientError

from ovos_a2a_solver.local_state import SharedJsonFile, package_state_dir

LOG = logging.getLogger("ovos_a2a_solver")

#: Seconds before a token's ``expires_in`` ends that it counts as expired (at most a tenth of its
#: lifetime), so that no request carries a token that expires on the way.
TOKEN_EXPIRY_MARGIN = 30.0
TOKENS_FORMAT = 1

_PERSON: contextvars.ContextVar[str] = contextvars.ContextVar("ovos_a2a_person", default="")


def person() -> str:
    """Whose turn the requests made now are for (``""``: no session's)."""
    return _PERSON.get()


@contextlib.contextmanager
def for_person(who: str) -> Iterator[None]:
    """Make the requests of the block for ``who``."""
    token = _PERSON.set(who)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # a generator closed in another context: nothing to undo there
            _PERSON.reset(token)


def default_tokens_path() -> Path:
    """``$XDG_STATE_HOME/ovos_a2a_solver/sign_ins.json`` (``~/.local/state`` by default)."""
    return package_state_dir() / "sign_ins.json"


@dataclass(frozen=True, repr=False)
class TokenResponse:
    """A token endpoint's answer (RFC 6749 §5.1): ``lifetime`` in seconds, ``None`` when it gave none."""

    access_token: str
    lifetime: float | None = None
    refresh_token: str | None = None
    scope: str = ""

    def __repr__(self) -> str:
        return f"TokenResponse(access_token=<redacted>, lifetime={self.lifetime}, scope={self.scope!r})"


class TokenEndpointError(A2AClientError):
    """The token endpoint answered with an error (RFC 6749 §5.2; RFC 8628 §3.5 adds
    ``authorization_pending``, ``slow_down``, ``access_denied`` and ``expired_token``)."""

    def __init__(self, message: str, status: int, error: str = "", description: str = "") -> None:
        super().__init__(message)
        self.status, self.error, self.description = status, error, description


async def token_request(http: httpx.AsyncClient, url: str, form: dict[str, str], *, what: str,
                        auth: httpx.Auth | None = None) -> TokenResponse:
    """POST ``form`` to the token endpoint ``url``; its tokens, or :class:`TokenEndpointError`
    naming ``what`` was refused ("the client credentials"); ``A2AClientError`` when it cannot
    be reached or answers no token. ``auth``: the client's authentication (``None``: a public
    client, whose id is in the form)."""
    try:
        response = await http.post(url, data=form, auth=auth, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise A2AClientError(f"cannot reach the OAuth2 token endpoint {url}: {exc}") from exc
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200:
        error = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else ""
        description = body.get("error_description") if isinstance(body, dict) else None
        description = description if isinstance(description, str) else ""
        said = f": {error}" + (f" ({description})" if description else "") if error else ""
        raise TokenEndpointError(f"the OAuth2 token endpoint {url} refused {what} (HTTP {response.status_code}{said})",
                                 response.status_code, error, description)
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise A2AClientError(f"the OAuth2 token endpoint {url} answered without an access_token")
    token_type = body.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise A2AClientError(f"the OAuth2 token endpoint {url} gave a {token_type!r} token; "
                             f"only Bearer tokens are supported")
    lifetime = body.get("expires_in")
    try:
        lifetime = float(lifetime) if lifetime is not None and not isinstance(lifetime, bool) else None
    except (TypeError, ValueError):
        lifetime = None
    refresh = body.get("refresh_token")
    scope = body.get("scope")
    return TokenResponse(token, None if lifetime is None else max(lifetime, 0.0),
                         refresh if isinstance(refresh, str) and refresh else None,
                         scope if isinstance(scope, str) else "")


def expiry(lifetime: float | None, now: float) -> float | None:
    """When a token of ``lifetime`` seconds got at ``now`` counts as expired (see :data:`TOKEN_EXPIRY_MARGIN`)."""
    return None if lifetime is None else now + lifetime - min(TOKEN_EXPIRY_MARGIN, lifetime / 10)


@dataclass(frozen=True, repr=False)
class SignedIn:
    """A person's tokens for one agent: ``expires_at`` in wall-clock seconds (``None``: until
    the agent refuses the access token, or there is none left to use: ``access_token`` "")."""

    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None
    scope: str = ""

    def fresh(self, now: float) -> bool:
        """Whether the access token may be sent at ``now``."""
        return bool(self.access_token) and (self.expires_at is None or now < self.expires_at)

    def __repr__(self) -> str:
        return (f"SignedIn(access_token=<redacted>, refresh_token={'<redacted>' if self.refresh_token else None}, "
                f"expires_at={self.expires_at}, scope={self.scope!r})")


def _validated(tokens: Any) -> dict:
    """Keep only well-formed entries of a loaded file."""
    clean = {}
    for key, entry in tokens.items():
        if isinstance(entry, dict) and isinstance(entry.get("access_token"), str):
            clean[str(key)] = {
                "access_token": entry["access_token"],
                "refresh_token": entry.get("refresh_token") if isinstance(entry.get("refresh_token"), str) else None,
                "expires_at": float(entry["expires_at"]) if isinstance(entry.get("expires_at"), (int, float)) else None,
                "scope": entry.get("scope") if isinstance(entry.get("scope"), str) else "",
            }
    return clean


class TokenStore:
    """The tokens people signed in for, by key (see the module); in memory, or in one private file
    that the plugin and the ``ovos-a2a`` command line share (signing out with one signs out the other)."""

    def __init__(self, path: str | os.PathLike | None = None, *, clock: Callable[[], float] = time.time) -> None:
        """``clock``: the wall-clock seconds tokens expire in (kept in the file: across processes)."""
        self.path = Path(path) if path is not None else None
        self.clock = clock
        self._file = SharedJsonFile(self.path, "sign-in file", "tokens", TOKENS_FORMAT, _validated)

    @classmethod
    def default(cls, **kwargs) -> "TokenStore":
        """The per-device store under the user's XDG state directory."""
        return cls(default_tokens_path(), **kwargs)

    def get(self, key: str) -> SignedIn | None:
        """The tokens kept under ``key``, if any."""
        with self._file.lock:
            entry = self._file.current().get(key)
            return SignedIn(**entry) if entry else None

    def put(self, key: str, signed_in: SignedIn) -> None:
        """Keep ``signed_in`` under ``key`` (replacing what was there)."""
        with self._file.transaction() as data:
            data[key] = {"access_token": signed_in.access_token, "refresh_token": signed_in.refresh_token,
                         "expires_at": signed_in.expires_at, "scope": signed_in.scope}

    def forget(self, key: str, access_token: str | None = None) -> None:
        """Forget the tokens under ``key`` (only if its access token is still ``access_token``, when given)."""
        with self._file.transaction() as data:
            if key in data and (access_token is None or data[key]["access_token"] == access_token):
                del data[key]

    def forget_people(self, prefix: str) -> list[SignedIn]:
        """Forget the tokens of every key that starts with ``prefix`` (a person, or an agent's
        people); what was forgotten (to revoke it)."""
        with self._file.transaction() as data:
            gone = [key for key in data if key.startswith(prefix)]
            return [SignedIn(**data.pop(key)) for key in gone]

    def keys(self) -> list[str]:
        """Every key that holds tokens (for tools and tests)."""
        with self._file.lock:
            return list(self._file.current())

