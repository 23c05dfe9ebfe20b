"""Signing in from the command line: ``ovos-a2a send`` and ``chat`` print where to go and the code,
wait for the person to sign in on another device, and go on; ``--json`` reports the steps;
``sign-out`` forgets the session's sign-in. A real authorization server (oidc-provider) and a
scripted person who reads the code from the command's stderr, as someone at the terminal does.
"""
import json
import re

import pytest

from support.authorization_server import Person
from support.cli_run import Cli
from support.waiting import wait_until

#: the note ``send`` prints when a sign-in starts
CODE_NOTE = re.compile(r"sign in: go to (?P<uri>\S+) and enter the code (?P<code>\S+) \(or open (?P<complete>\S+)\)")


@pytest.fixture
def cli(tmp_path):
    return Cli(tmp_path / "state")


def sign_in_flags(server, client_id="voice-device"):
    return ["--oauth2-client", client_id, "--oauth2-token-origin", server.url]


def run_signing_in(cli, tmp_path, person: Person, act: str, *argv: str):
    """Run ``argv``; when it prints a code, have ``person`` act on it ("approve" or "deny"); its result."""
    pending = cli.start(*argv, stderr_file=tmp_path / "stderr")
    try:
        shown = wait_until(lambda: CODE_NOTE.search(pending.stderr_so_far()), "the code on stderr")
        getattr(person, act)(shown["uri"], shown["code"])
        return pending.result(), shown
    finally:
        pending.kill()


def test_send_prints_the_code_waits_and_answers_with_the_steps_in_json(cli, sign_in_agent, authorization_server,
                                                                        tmp_path):
    url = sign_in_agent.agent("signin")
    result, shown = run_signing_in(cli, tmp_path, Person("ada"), "approve", "send", url, "my day", "--session", "s",
                                   "--timeout", "2", "--json", *sign_in_flags(authorization_server))
    assert result.returncode == 0, result.report
    report = json.loads(result.stdout)
    assert report["answer"] == "calendar of ada: my day"  # the prompt went to stderr, not into the answer
    assert [step["step"] for step in report["sign_in"]] == ["started", "signed in"]
    assert report["sign_in"][0]["verification_uri_complete"] == shown["complete"]
    assert report["sign_in"][0]["user_code"] == shown["code"]
    again = cli.run("send", url, "tomorrow", "--session", "s", *sign_in_flags(authorization_server))
    assert again.stdout.strip() == "calendar of ada: tomorrow" and "sign in" not in again.stderr, again.report


def test_sign_out_forgets_the_sessions_sign_in(cli, sign_in_agent, authorization_server, tmp_path):
    url = sign_in_agent.agent("signin")
    result, _ = run_signing_in(cli, tmp_path, Person("bo"), "approve", "send", url, "my day", "--session", "t",
                               *sign_in_flags(authorization_server))
    assert result.stdout.strip() == "calendar of bo: my day", result.report
    out = cli.run("sign-out", url, "--session", "t", *sign_in_flags(authorization_server))
    assert out.returncode == 0 and "1 sign-in forgotten" in out.stdout, out.report
    out = cli.run("sign-out", url, "--session", "t", *sign_in_flags(authorization_server))
    assert "was not signed in" in out.stdout, out.report
    result, _ = run_signing_in(cli, tmp_path, Person("bo"), "approve", "send", url, "my week", "--session", "t",
                               *sign_in_flags(authorization_server))
    assert result.stdout.strip() == "calendar of bo: my week", result.report  # asked to sign in anew


def test_a_denied_sign_in_ends_the_command_with_one_line(cli, sign_in_agent, authorization_server, tmp_path):
    result, _ = run_signing_in(cli, tmp_path, Person("cy"), "deny", "send", sign_in_agent.agent("signin"), "my day",
                               *sign_in_flags(authorization_server))
    assert result.returncode == 1, result.report
    assert result.stderr_lines[-1] == "ovos-a2a: The sign-in to signin was declined, so I cannot ask it."
    assert result.stdout == ""


def test_a_client_id_alone_is_no_client_credentials(cli, agent):
    result = cli.run("send", agent.agent("oauth"), "hi", "--oauth2-client", "client-1")
    assert result.returncode == 1 and "set oauth2_client_secret too" in result.stderr, result.report


def test_chat_prints_the_code_waits_and_goes_on(cli, sign_in_agent, authorization_server, tmp_path):
    pending = cli.start("chat", sign_in_agent.agent("signin"), "--timeout", "2", *sign_in_flags(authorization_server),
                        typed=True, stderr_file=tmp_path / "stderr")
    try:
        pending.type("my day\n")
        shown = wait_until(lambda: CODE_NOTE.search(pending.stderr_so_far()), "the code on stderr")
        Person("dot").approve(shown["uri"], shown["code"])
        pending.type("and tomorrow\n/quit\n")
        result = pending.result()
    finally:
        pending.kill()
    assert result.returncode == 0, result.report
    said = [line.split("signin> ", 1)[1] for line in result.stdout.splitlines() if "signin> " in line]
    assert said == ["calendar of dot: my day", "calendar of dot: and tomorrow"], result.report
