"""Settings as people give them: through the real environment and real files, never the
constructor. Every list or mapping setting takes its documented plain form; every mistake is one
line naming the variable, or the file, line and column, and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.settings import (
    ENV_NAMES,
    FIELD_INFO,
    _kind,
    load_settings,
    unknown_variables,
)
from engine.errors import ConfigurationError

PLAIN: dict[str, tuple[str, Any]] = {
    # setting: (what a person writes in the environment, what the setting becomes)
    "reviewers": ("U111,U222", ("U111", "U222")),
    "families": ("prod-reasoner=openai", {"prod-reasoner": "openai"}),
    "models": ("judge=gpt-4o, pro=gpt-4o-mini", {"judge": "gpt-4o", "pro": "gpt-4o-mini"}),
    "reasoning_efforts": ("judge=high, pro=medium", {"judge": "high", "pro": "medium"}),
    "workspace_policies": ("T1=No spam.", {"T1": "No spam."}),
    "context_windows": ("qwen2.5-7b=8192", {"qwen2.5-7b": 8192}),
    "mcp_authorization_servers": ("https://idp.example, https://login.example/tenant/",
                                  ("https://idp.example", "https://login.example/tenant")),
    "allowed_hosts": ("dialectic.internal, bot.example", ("dialectic.internal", "bot.example")),
    "prices": ('{"m": {"input": 1, "output": 2}}', None),
    "providers": ('{"local": {"base_url": "http://127.0.0.1:11434/v1"}}', None),
    "presets": ('{"quick": {"mode": "simple", "rounds": 0}}', None),
    "judges": ('[{"name": "a", "expertise": "x"}, {"name": "b", "expertise": "y"}]', None),
    "schedules": ('[{"id": "m", "cron": "0 8 * * 1-5", "channel": "C0123", "topics": ["t"]}]',
                  None),
}


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """The process environment, emptied of our variables, in a directory with no settings."""
    for name in list(os.environ):
        if name.startswith(("DIALECTIC_", "OPENAI_", "SLACK_", "DATABASE_URL")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def _section_value(name: str, settings: Any) -> Any:
    for section in ("engine", "storage", "service", "scheduling", "http", "slack"):
        part = getattr(settings, section)
        if name in type(part).model_fields:
            return getattr(part, name)
    raise AssertionError(name)


def test_every_list_or_mapping_setting_is_covered_here() -> None:
    structured = {name for name, info in FIELD_INFO.items() if _kind(info.annotation) != "scalar"}
    assert structured == set(PLAIN)


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_list_and_mapping_settings_take_their_plain_form_from_the_environment(
        name: str, environ: pytest.MonkeyPatch) -> None:
    text, expected = PLAIN[name]
    environ.setenv(ENV_NAMES[name][0], text)
    if name == "providers":   # bare models (the default one) need the default endpoint too
        environ.setenv("OPENAI_API_KEY", "sk-default")
    value = _section_value(name, load_settings())
    if expected is not None:
        assert value == expected
    else:
        assert value  # parsed into the setting's models


def test_a_single_reviewer_and_a_json_list_both_work(environ: pytest.MonkeyPatch) -> None:
    environ.setenv("DIALECTIC_REVIEWERS", "U111")
    assert load_settings().service.reviewers == ("U111",)
    environ.setenv("DIALECTIC_REVIEWERS", '["U1", "S2"]')
    assert load_settings().service.reviewers == ("U1", "S2")


def test_the_documented_reviewers_form_runs_every_command(tmp_path: Path) -> None:
    """The review before this one: `DIALECTIC_REVIEWERS=U111,U222` crashed every command."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIALECTIC_")}
    env.update({"DIALECTIC_REVIEWERS": "U111,U222", "DIALECTIC_MODELS": "judge=gpt-4o",
                "DIALECTIC_CONFIG": os.devnull})
    done = subprocess.run([sys.executable, "-m", "bot", "presets"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("DIALECTIC_DAILY_BUDGET_USD", "abc", "DIALECTIC_DAILY_BUDGET_USD: Input should be a valid "
                                          "number"),
    ("DIALECTIC_DAILY_BUDGET_USD", "-1", "DIALECTIC_DAILY_BUDGET_USD: Input should be greater "
                                         "than or equal to 0"),
    ("DIALECTIC_PORT", "70000", "DIALECTIC_PORT: Input should be less than or equal to 65535"),
    ("DIALECTIC_LOG_LEVEL", "LOUD", "DIALECTIC_LOG_LEVEL: use DEBUG, INFO"),
    ("DIALECTIC_PRESETS", "{oops", "DIALECTIC_PRESETS: expected JSON"),
    ("DIALECTIC_MODELS", "judge", "DIALECTIC_MODELS: expected key=value pairs"),
    ("DATABASE_URL", "sqllite+aiosqlite:///x.db", "DATABASE_URL: unknown database 'sqllite' "
                                                  "(did you mean 'sqlite'?)"),
    ("DATABASE_URL", "mysql://h/db", "DATABASE_URL: unknown database 'mysql'"),
    ("DATABASE_URL", "postgresql+foo://h/db", "DATABASE_URL: unknown driver 'foo'"),
    ("DIALECTIC_CONFIG", "/nowhere/dialectic.toml", "DIALECTIC_CONFIG=/nowhere/dialectic.toml: "
                                                    "no such file"),
    ("DIALECTIC_API_TOKEN", "", "DIALECTIC_API_TOKEN: is empty"),
    ("DIALECTIC_API_TOKEN", "   ", "DIALECTIC_API_TOKEN: is empty"),
])
def test_a_bad_variable_is_one_line_naming_it(variable: str, value: str, message: str,
                                              environ: pytest.MonkeyPatch) -> None:
    environ.setenv(variable, value)
    with pytest.raises(ConfigurationError) as caught:
        load_settings()
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text


@pytest.mark.parametrize(("url", "mapped"), [
    ("sqlite:///x.db", "sqlite+aiosqlite:///x.db"),
    ("postgres://u:p@h/db", "postgresql+asyncpg://u:p@h/db"),
    ("postgresql://h/db", "postgresql+asyncpg://h/db"),
    ("postgresql+psycopg2://h/db", "postgresql+asyncpg://h/db"),
    ("sqlite+aiosqlite:///./d.db", "sqlite+aiosqlite:///./d.db"),
])
def test_synchronous_database_urls_map_to_the_async_drivers(
        url: str, mapped: str, environ: pytest.MonkeyPatch) -> None:
    environ.setenv("DATABASE_URL", url)
    assert load_settings().storage.database_url == mapped


@pytest.mark.parametrize(("toml", "message"), [
    ("daily_budget = 25\n", "dialectic.toml: unknown setting 'daily_budget' (did you mean "
                            "'daily_budget_usd'?)"),
    ("default_modle = 'gpt-4o'\n", "dialectic.toml: unknown setting 'default_modle' (did you "
                                   "mean 'default_model'?)"),
    ("a = 1\nb = = 2\n", "dialectic.toml:2:5: Invalid value"),
    ("x = [1,\n", "dialectic.toml: Invalid value at the end of file"),
    ('[presets.quick]\nmode = "consensu"\n', "dialectic.toml: presets.quick.mode: Input should "
                                             "be 'simple'"),
    ('[presets.solo]\nmode = "consensus"\njudges = [{name = "a", expertise = "x"}]\n',
     "dialectic.toml: presets.solo: a consensus preset needs at least two judges"),
    ('[presets.p]\njudges = [{name = "a", expertise = "x", wieght = 2}, '
     '{name = "b", expertise = "y"}]\n',
     "dialectic.toml: presets.p.judges.0.wieght: unknown key 'wieght' (did you mean 'weight'?)"),
    ("daily_budget_usd = 'lots'\n", "dialectic.toml: daily_budget_usd: Input should be a valid "
                                    "number"),
])
def test_a_bad_settings_file_is_one_line_naming_file_line_and_key(
        toml: str, message: str, environ: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "dialectic.toml").write_text(toml)
    with pytest.raises(ConfigurationError) as caught:
        load_settings()
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_an_empty_optional_variable_means_unset(environ: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET",
                 "DIALECTIC_REVIEW_CHANNEL"):
        environ.setenv(name, "")
    settings = load_settings()
    assert settings.engine.is_rehearsal and not settings.slack.enabled
    assert settings.slack.review_channel is None


def test_the_environment_wins_over_the_file(environ: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "dialectic.toml").write_text("daily_budget_usd = 25\nport = 4000\n")
    environ.setenv("DIALECTIC_DAILY_BUDGET_USD", "5")
    settings = load_settings()
    assert settings.service.daily_budget_usd == 5 and settings.http.port == 4000


def test_a_preset_table_takes_its_name_from_its_key(environ: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    (tmp_path / "dialectic.toml").write_text('[presets.arch-review]\nmode = "structured"\n')
    assert load_settings().engine.presets["arch-review"].name == "arch-review"


def test_unknown_dialectic_variables_are_named_with_a_guess() -> None:
    lines = unknown_variables({"DIALECTIC_DAILY_BUDGET": "5", "DIALECTIC_CONFIG": "x",
                               "DIALECTIC_TEST_PG_URL": "y", "HOME": "/root"})
    assert lines == ["DIALECTIC_DAILY_BUDGET is not a setting (did you mean "
                     "'DIALECTIC_DAILY_BUDGET_USD'?); it is ignored"]


@pytest.mark.parametrize(("written", "reviewers"), [
    ("U111 U222", ("U111", "U222")),                                   # spaces
    ("U111;U222, W333", ("U111", "U222", "W333")),
    ("<@U0123ABC>, <@U0999XYZ|ana>", ("U0123ABC", "U0999XYZ")),        # pasted mentions
    ("<!subteam^S0123ABC|@oncall> U111", ("S0123ABC", "U111")),        # a user-group mention
    ('["<@U0123ABC>", "S0999"]', ("U0123ABC", "S0999")),                # JSON
    ("U111, U111", ("U111",)),
])
def test_reviewers_in_the_forms_people_paste(environ: pytest.MonkeyPatch, written: str,
                                             reviewers: tuple[str, ...]) -> None:
    environ.setenv("DIALECTIC_REVIEWERS", written)
    assert load_settings(os.environ).service.reviewers == reviewers


@pytest.mark.parametrize("written", ["alice", "@oncall", "U111, bob", "<#C0123|general>"])
def test_a_reviewer_that_is_no_id_is_an_error_naming_it(environ: pytest.MonkeyPatch,
                                                        written: str) -> None:
    environ.setenv("DIALECTIC_REVIEWERS", written)
    with pytest.raises(ConfigurationError) as caught:
        load_settings(os.environ)
    said = str(caught.value)
    assert said.startswith("DIALECTIC_REVIEWERS: ") and "\n" not in said
    assert "is no Slack user id" in said
