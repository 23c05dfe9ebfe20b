"""The run trusts no certificate authority (support/trust_store.py): every peer of the tests is
on loopback, and a test of TLS gives the authority it trusts. The processes the tests start
inherit that; the installers they run get the user's own trust store back."""
import json
import os
import subprocess
import sys

from support.trust_store import TRUST_VARS, USER_VALUE_PREFIX, installer_environment


def test_the_trust_store_of_the_run_is_an_empty_directory_and_no_bundle():
    assert "SSL_CERT_FILE" not in os.environ
    trusted = os.environ["SSL_CERT_DIR"]
    assert os.path.isdir(trusted) and os.listdir(trusted) == []


def test_a_process_the_tests_start_makes_http_clients_that_trust_no_authority():
    probe = ("import json, os, httpx; print(json.dumps([os.environ.get('SSL_CERT_FILE'), "
             "os.environ.get('SSL_CERT_DIR'), len(httpx.create_ssl_context().get_ca_certs())]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    bundle, directory, authorities = json.loads(out.stdout)
    assert (bundle, directory, authorities) == (None, os.environ["SSL_CERT_DIR"], 0)


def test_an_installer_gets_the_users_own_trust_store_back(monkeypatch):
    monkeypatch.setenv(USER_VALUE_PREFIX + "SSL_CERT_FILE", "/the/users/bundle.pem")
    monkeypatch.delenv(USER_VALUE_PREFIX + "SSL_CERT_DIR", raising=False)
    environment = installer_environment()
    assert environment["SSL_CERT_FILE"] == "/the/users/bundle.pem"
    assert "SSL_CERT_DIR" not in environment  # the user had none: the run's empty one is not passed on
