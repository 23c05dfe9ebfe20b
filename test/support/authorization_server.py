"""A real OAuth 2.0 / OpenID Connect authorization server for the sign-in tests, and the person
who signs in on it.

:class:`AuthorizationServer` runs ``test/support/peers/js/authorization_server.cjs``: oidc-provider
(OpenID Certified; npm, pinned, installed once per machine like the A2A JS SDK, see
``support.js_peers``) with the device authorization grant (RFC 8628), refresh tokens, revocation
and introspection. The script's header lists its clients and what each one's policy is.

:class:`Person` is the user with a phone: given the verification URI and the code the device
said, they open the page, type the code, confirm (or abort), sign in as themselves and consent,
on the provider's own HTML pages, over HTTP, with cookies, as a browser does.

::

    with AuthorizationServer() as server:
        Person("ada").approve(uri, code)
        server.log()        # what the provider was asked, and answered
        server.revoke("ada")
"""
from __future__ import annotations

import threading
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx

from support.interop import PeerAgentProcess
from support.js_peers import OIDC_PROVIDER, JS_DIR, _node_env, _tool

ADMIN_TIMEOUT = 5.0
#: the client of the agents that check the tokens they are sent (introspection)
AGENT_CLIENT = ("calendar-agent", "agent-secret")


class AuthorizationServer(PeerAgentProcess):
    """oidc-provider on loopback, port 0; :attr:`url` is its issuer."""

    script = JS_DIR / OIDC_PROVIDER.agent_script

    def command(self):
        return [_tool("node"), str(self.script), *self.args], _node_env(OIDC_PROVIDER)

    @property
    def discovery(self) -> str:
        """The OpenID Connect discovery document's URL."""
        return self.ready["discovery"]

    def metadata(self) -> dict:
        """The discovery document."""
        return httpx.get(self.discovery, timeout=ADMIN_TIMEOUT).raise_for_status().json()

    def _admin(self, method: str, path: str, **params) -> object:
        response = httpx.request(method, f"{self.url}/_admin/{path}", params=params, timeout=ADMIN_TIMEOUT)
        return response.raise_for_status().json()

    def log(self) -> list[dict]:
        """Every request to the provider: ``{at, method, path, form, authorization, answer}``."""
        return self._admin("GET", "log")

    def polls(self, client_id: str | None = None) -> list[dict]:
        """The device-code polls of the token endpoint (of ``client_id``'s codes, if given)."""
        return [e for e in self.log() if e["path"] == "/token"
                and e["form"].get("grant_type") == "urn:ietf:params:oauth:grant-type:device_code"
                and (client_id is None or e["form"].get("client_id") == client_id)]

    def tokens(self) -> dict:
        """``{"access": [{value, account, client}], "refresh": [...]}``: every token issued."""
        return self._admin("GET", "tokens")

    def revoke(self, account: str) -> int:
        """Take every grant of ``account`` away, with its tokens; how many there were."""
        return self._admin("POST", "revoke", account=account)["revoked"]


class _Forms(HTMLParser):
    """The forms of a page: ``{id or action: {"action", "inputs": {name: value}}}``."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, dict] = {}
        self._current: dict | None = None
        self.buttons: list[dict] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self._current = {"action": attrs.get("action", ""), "inputs": {}}
            self.forms[attrs.get("id") or attrs.get("action", "")] = self._current
        elif tag == "input" and self._current is not None and attrs.get("name"):
            self._current["inputs"][attrs["name"]] = attrs.get("value") or ""
        elif tag == "button":
            self.buttons.append(attrs)

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def forms_of(page: str) -> _Forms:
    parser = _Forms()
    parser.feed(page)
    return parser


class Person:
    """Someone who signs in on the provider's pages with a browser of their own (a phone)."""

    def __init__(self, account: str) -> None:
        self.account = account

    def approve(self, verification_uri: str, user_code: str = "") -> str:
        """Type ``user_code`` on ``verification_uri`` (or open a ``verification_uri_complete``, which
        holds it, as a screen's link does), confirm, sign in and consent; the last page's text."""
        return self._sign_in(verification_uri, user_code, abort=False)

    def deny(self, verification_uri: str, user_code: str = "") -> str:
        """Type ``user_code`` on ``verification_uri`` (or open a complete one) and abort at the confirmation."""
        return self._sign_in(verification_uri, user_code, abort=True)

    def _sign_in(self, verification_uri: str, user_code: str, abort: bool) -> str:
        with httpx.Client(follow_redirects=True, timeout=ADMIN_TIMEOUT) as browser:
            page = browser.get(verification_uri).raise_for_status()
            forms = forms_of(page.text).forms
            if user_code:
                page = self._submit(browser, page, forms["op.deviceInputForm"], user_code=user_code)
            else:  # the code came in the address: the page posts it on by itself, as a browser runs its script
                (posted,) = forms.values()
                page = self._submit(browser, page, posted)
            confirm = forms_of(page.text).forms.get("op.deviceConfirmForm")
            assert confirm is not None, f"no confirmation page after the code {user_code}:\n{page.text}"
            page = self._submit(browser, page, confirm, **({"abort": "yes"} if abort else {}))
            if abort:
                return page.text
            for _ in range(4):  # the provider's login, then its consent
                forms = forms_of(page.text).forms
                prompt = next((f for f in forms.values() if "prompt" in f["inputs"]), None)
                if prompt is None:
                    return page.text
                if prompt["inputs"]["prompt"] == "login":
                    page = self._submit(browser, page, prompt, login=self.account, password="any")
                else:
                    page = self._submit(browser, page, prompt)
            raise AssertionError(f"the sign-in did not end:\n{page.text}")

    @staticmethod
    def _submit(browser: httpx.Client, page: httpx.Response, form: dict, **fields: str) -> httpx.Response:
        return browser.post(urljoin(str(page.url), form["action"]),
                            data={**form["inputs"], **fields}).raise_for_status()


class SignInWatch:
    """An ``on_sign_in`` listener for tests: it keeps every event, and when a sign-in starts, has
    ``person`` act on its prompt at once ("approve" or "deny"), on a thread of its own (the
    listener is called on the client's event loop, which the sign-in must not hold up)."""

    def __init__(self, person: Person | None = None, act: str = "approve") -> None:
        self.person, self.act = person, act
        self.events: list = []
        self._acting: list[threading.Thread] = []
        self._failures: list[BaseException] = []

    def __call__(self, event) -> None:
        self.events.append(event)
        if event.step == "started" and self.person is not None:
            thread = threading.Thread(target=self._sign_in, args=(event.prompt,), daemon=True)
            self._acting.append(thread)
            thread.start()

    def _sign_in(self, prompt) -> None:
        try:
            getattr(self.person, self.act)(prompt.verification_uri, prompt.user_code)
        except BaseException as exc:  # raised again by done()
            self._failures.append(exc)

    @property
    def steps(self) -> list[tuple[str, str | None]]:
        """``(step, session)`` of each event, in order."""
        return [(event.step, event.session_id) for event in self.events]

    def done(self, timeout: float = 10.0) -> None:
        """Wait for the person to have acted; raise what went wrong on their side."""
        for thread in self._acting:
            thread.join(timeout)
            assert not thread.is_alive(), "the person did not finish signing in"
        if self._failures:
            raise self._failures[0]
