"""The client's policies (RetryPolicy, BreakerPolicy, CardTrust, AnswerLimits): each refuses a
bad value with an error naming the setting, the client takes them whole and nothing else in
their place, and a persona's block reads their settings as keys of its own, by the same specs."""
import pytest

from ovos_a2a_solver import A2AClient, AnswerLimits, BreakerPolicy, CardTrust, RetryPolicy
from ovos_a2a_solver._settings import EngineSettings, settings_table

from support import REPO_ROOT, load_tool

PLUGIN_DOC = REPO_ROOT / "docs" / "plugin.md"
#: ``tools/settings_tables.py``: reads and writes the docs' generated settings tables
settings_tables = load_tool("settings_tables")

URL = "http://127.0.0.1:9/agent"


@pytest.mark.parametrize("build, says", [
    (lambda: RetryPolicy(max_retries=11), "RetryPolicy: 'max_retries' must be a whole number from 0 to 10, got 11"),
    (lambda: RetryPolicy(max_retries=True), "RetryPolicy: 'max_retries' must be a whole number from 0 to 10, "
                                            "got True"),
    (lambda: RetryPolicy(retry_base_delay=0), "RetryPolicy: 'retry_base_delay' must be positive, got 0"),
    (lambda: BreakerPolicy(threshold=0), "BreakerPolicy: 'threshold' must be positive, got 0"),
    (lambda: BreakerPolicy(threshold=2.5), "BreakerPolicy: 'threshold' must be a whole number, got 2.5"),
    (lambda: BreakerPolicy(cooldown="soon"), "BreakerPolicy: 'cooldown' must be a number, got 'soon'"),
    (lambda: CardTrust(require_signed_card="maybe"),
     "CardTrust: 'require_signed_card' must be true or false, got 'maybe'"),
    (lambda: CardTrust(card_public_key=3), "CardTrust: 'card_public_key' must be a string, got 3"),
    (lambda: CardTrust(card_public_key="k.pem", card_jwks_url="https://example.com/keys"),
     "give card_public_key or card_jwks_url, not both"),
    (lambda: CardTrust(signature_verifier="yes"),
     "CardTrust: 'signature_verifier' must be a function of the card, got 'yes'"),
    (lambda: CardTrust(require_signed_card=True, signature_verifier=print),
     "give signature_verifier or the card signature settings"),
    (lambda: AnswerLimits(max_answer_chars=0), "AnswerLimits: 'max_answer_chars' must be positive, got 0"),
    (lambda: AnswerLimits(max_reply_bytes=None), "AnswerLimits: 'max_reply_bytes' must be a whole number, got None"),
    (lambda: AnswerLimits(answer_cut=5), "AnswerLimits: 'answer_cut' must be a string, got 5"),
])
def test_a_bad_value_is_refused_by_its_policy_naming_the_setting(build, says):
    with pytest.raises(ValueError) as refused:
        build()
    assert str(refused.value).startswith(says), str(refused.value)


def test_a_policy_converts_what_it_is_given_and_a_blank_line_is_its_default():
    assert RetryPolicy(max_retries="3", retry_base_delay=1) == RetryPolicy(max_retries=3, retry_base_delay=1.0)
    assert AnswerLimits(answer_cut="  ") == AnswerLimits()
    assert CardTrust(card_jwks_url="https://example.com/keys").signed


@pytest.mark.parametrize("keyword, given", [("retries", {"max_retries": 0}), ("breaker", 3),
                                            ("card_trust", True), ("limits", AnswerLimits)])
def test_the_client_takes_a_policy_and_nothing_in_its_place(keyword, given):
    with pytest.raises(ValueError, match=f"^{keyword} must be an ovos_a2a_solver.[A-Za-z]+, not "):
        A2AClient(URL, **{keyword: given})


def test_a_policy_the_client_takes_is_one_a_persona_block_gives():
    settings = EngineSettings.from_config({"agent_url": URL, "max_retries": 0, "retry_base_delay": "0.5",
                                           "breaker_threshold": 5, "breaker_cooldown": 2,
                                           "require_signed_card": "on", "max_answer_chars": 100,
                                           "answer_cut": "Enough.", "max_reply_bytes": 2048})
    assert settings.retries == RetryPolicy(max_retries=0, retry_base_delay=0.5)
    assert settings.breaker == BreakerPolicy(threshold=5, cooldown=2)
    assert settings.card_trust == CardTrust(require_signed_card=True)
    assert settings.limits == AnswerLimits(max_answer_chars=100, answer_cut="Enough.", max_reply_bytes=2048)
    assert EngineSettings.from_config({"agent_url": URL}).retries == RetryPolicy()


@pytest.mark.parametrize("config, says", [
    ({"max_retries": 11}, "ovos-a2a-solver: 'max_retries' must be a whole number from 0 to 10, got 11"),
    ({"breaker_threshold": 0}, "ovos-a2a-solver: 'breaker_threshold' must be positive, got 0"),
    ({"max_reply_bytes": "lots"}, "ovos-a2a-solver: 'max_reply_bytes' must be a whole number, got 'lots'"),
    ({"card_public_key": "k.pem", "card_jwks_url": "https://example.com/keys"},
     "ovos-a2a-solver: give card_public_key or card_jwks_url, not both"),
])
def test_a_persona_block_names_its_own_key_for_a_policy_setting(config, says):
    with pytest.raises(ValueError) as refused:
        EngineSettings.from_config({"agent_url": URL, **config})
    assert str(refused.value).startswith(says), str(refused.value)


def test_the_plugin_settings_table_is_the_settings():
    assert settings_tables.written_table(PLUGIN_DOC, settings_tables.PLUGIN) == settings_table(), settings_table()
