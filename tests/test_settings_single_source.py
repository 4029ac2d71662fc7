"""Settings are the single source of the CLI options, the environment variables, the Dagster
resources and the README's configuration table: each is checked against `Settings` here."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from terrarium_dagster.cli import build_parser
from terrarium_dagster.config import ENV_ONLY, Settings, cli_group, load_settings, settings_table
from terrarium_dagster.defs.resources import AgentResource, CorpusResource, StoreResource
from tests.support.cli import run_args

README = Path(__file__).resolve().parents[1] / "README.md"

# Dagster resource field → the setting it sets (where the names differ).
RESOURCE_NAMES = {
    (CorpusResource, "path"): "corpus",
    (StoreResource, "path"): "db",
    (AgentResource, "url"): "agent_url",
}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for action in parser._actions:  # argparse exposes subparsers only this way
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise AssertionError("no subcommands")


def _flags(name: str) -> dict[str, str]:
    return {
        option: action.dest
        for action in _subparser(name)._actions
        for option in action.option_strings
    }


def test_readme_configuration_table_is_the_generated_one() -> None:
    table = settings_table()
    assert table in README.read_text(encoding="utf-8"), (
        "README's configuration table differs from Settings; paste the output of "
        "`python -c 'from terrarium_dagster.config import settings_table; print(settings_table())'`"
    )


# What a command never reads is not offered: the story names a Dagster code location (`dev`
# only); `why` sends one request at a time with its own rounds and no curator; an edition has
# no scene rounds and no curator.
_NOT_READ = {
    "run": {"story"},
    "dev": set(),
    "why": {"story", "concurrency", "max_rounds", "curator_thinking", "curator_max_tokens"},
    "edition": {"story", "max_rounds", "curator_thinking", "curator_max_tokens"},
}


@pytest.mark.parametrize("command", sorted(_NOT_READ))
def test_every_setting_but_secrets_is_an_option_of(command: str) -> None:
    flags = _flags(command)
    for name in Settings.model_fields:
        flag = f"--{name.replace('_', '-')}"
        if cli_group(name) == ENV_ONLY:
            assert flag not in flags, f"{name} is a secret and must not be a flag"
        elif name in _NOT_READ[command]:
            assert flag not in flags, f"`terrarium {command}` never reads {name}"
        else:
            assert flags.get(flag) == name, f"`terrarium {command}` lacks {flag}"


def test_readers_take_the_store_and_corpus_options() -> None:
    for command in ("export", "lineage"):
        assert {"--db", "--corpus", "--url-template"} <= set(_flags(command))
    assert "--db" in _flags("status")


def test_every_cli_option_reaches_the_settings() -> None:
    args = build_parser().parse_args(
        run_args(top_p=0.5, seed=7, max_rounds=3, timeout_s=9, max_retries=1, no_thinking=True)
    )
    given = {key: value for key, value in vars(args).items() if key in Settings.model_fields}
    settings = load_settings(**given)
    assert (settings.top_p, settings.seed, settings.max_rounds) == (0.5, 7, 3)
    assert (settings.timeout_s, settings.max_retries) == (9.0, 1)
    assert settings.enable_thinking is False and settings.offline is True


def test_every_setting_is_read_from_its_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERRARIUM_SEED", "11")
    monkeypatch.setenv("TERRARIUM_MAX_ROUNDS", "4")
    settings = load_settings()
    assert (settings.seed, settings.max_rounds) == (11, 4)
    assert Settings.model_config.get("env_prefix") == "TERRARIUM_"


def test_every_setting_can_be_set_by_a_dagster_resource() -> None:
    covered: set[str] = set()
    for resource in (CorpusResource, StoreResource, AgentResource):
        for field in resource.model_fields:
            covered.add(RESOURCE_NAMES.get((resource, field), field))
    missing = set(Settings.model_fields) - covered
    assert not missing, f"settings no Dagster resource can set: {sorted(missing)}"
