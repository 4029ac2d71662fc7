"""The argument parser's shared pieces: the parser class, a subcommand with its summary, and
the options generated from `Settings` (the single source of every setting's flag)."""

from __future__ import annotations

import argparse
import textwrap
import typing
from pathlib import Path
from typing import Any

from pydantic_core import PydanticUndefined

from terrarium_dagster.config import (
    ENV_ONLY,
    Settings,
    cli_group,
    load_settings,
    setting_origin,
)
from terrarium_dagster.errors import InputError
from terrarium_dagster.paths import default_store_path
from terrarium_dagster.store.base import refuse_side_file


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default where it has one (not for flags, nor for settings, whose
    defaults come from `Settings` and are written into their help), and wraps lines at spaces
    only: a default path in a folder named with a hyphen ("/work/my-books/data/terrarium.db")
    was cut after it, across two lines (a path longer than a line stands whole on its own)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)

    def _split_lines(self, text: str, width: int) -> list[str]:
        words = " ".join(text.split())
        return textwrap.wrap(words, width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(
            " ".join(text.split()),
            width,
            initial_indent=indent,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        )


class Parser(argparse.ArgumentParser):
    """A parser whose usage errors are raised (as `UsageError`), not exits: `main` says them in
    one line, pointing at `--help` instead of printing the usage."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def add_command(commands: Any, name: str, *, help: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand whose one-line summary (in `terrarium --help`) is also the first line of
    its own `--help`."""
    summary = help[0].upper() + help[1:] + "."
    description = kwargs.pop("description", None)
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help,
        description=f"{summary} {description}" if description else summary,
        **kwargs,
    )
    # -v after the command too (`terrarium status -v`), not only before it; unset unless given,
    # so that `terrarium -v status` keeps it
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logging"
    )
    return parser


class UsageError(Exception):
    """Arguments the parser refused (`main` turns it into exit code 2)."""


# Aliases kept for options users already know; every other flag is `--<setting-name>`.
_ALIASES = {"enable_thinking": ("--thinking",)}
# Options that exclude each other (one backend is chosen).
_EXCLUSIVE = {"agent_url", "offline"}


def _option_type(annotation: Any) -> Any:
    """The argparse type of a setting: the one non-None member of its annotation."""
    members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    kind = members[0] if members else annotation
    # a path is checked as the setting (`--corpus ''` is no file, not the folder Path('') is)
    return str if kind is Path else kind


# Settings only some commands use: the site's address (where post links point, where `serve`
# listens) means nothing to status, score, recover, snapshots or undo.
_ONLY_WHERE_ASKED = frozenset({"site_url", "story"})


def _shown_default(name: str) -> str | None:
    """A setting's default as its help shows it (None: it has none, or its text says it)."""
    if name == "db":
        return str(default_store_path())
    default = Settings.model_fields[name].default
    if default is None or default is False or default is PydanticUndefined:
        return None
    return str(default)


def _add_settings(
    parser: argparse.ArgumentParser,
    group_name: str,
    also: frozenset[str] = frozenset(),
    omit: frozenset[str] = frozenset(),
) -> None:
    """Generate the options of one settings group from `Settings` (the single source); the
    settings of `_ONLY_WHERE_ASKED` only when named in `also`, none named in `omit`."""
    target: Any = parser
    if group_name == "agent":
        target = parser.add_argument_group("agent")
    exclusive = target.add_mutually_exclusive_group() if group_name == "agent" else None
    for name, field in Settings.model_fields.items():
        if cli_group(name) != group_name or name in omit:
            continue
        if name in _ONLY_WHERE_ASKED and name not in also:
            continue
        flags = (f"--{name.replace('_', '-')}", *_ALIASES.get(name, ()))
        where = exclusive if name in _EXCLUSIVE and exclusive is not None else target
        shown = _shown_default(name)
        default = f"default: {shown}; " if shown is not None else ""
        help_text = f"{field.description or name} ({default}env TERRARIUM_{name.upper()})"
        kind = _option_type(field.annotation)
        if kind is bool:
            action = argparse.BooleanOptionalAction if field.default is None else "store_true"
            where.add_argument(*flags, dest=name, action=action, default=None, help=help_text)
        else:
            where.add_argument(
                *flags, dest=name, type=kind, default=None, metavar=name.upper(), help=help_text
            )


def add_store(
    parser: argparse.ArgumentParser, *, site: bool = False, dagster: bool = False
) -> None:
    """--db, --site-url where `site` (the commands that link to or serve the site), --story
    where `dagster` (the commands that take every setting, or start Dagster)."""
    also = {"site_url"} if site else set()
    if dagster:
        also.add("story")
    _add_settings(parser, "store", also=frozenset(also))


def add_corpus(parser: argparse.ArgumentParser, *, links: bool = True) -> None:
    """--corpus, and --url-template where the command shows a post's link (`links`)."""
    _add_settings(parser, "corpus", omit=frozenset() if links else frozenset({"url_template"}))


def add_agent(parser: argparse.ArgumentParser, omit: frozenset[str] = frozenset()) -> None:
    """The agent's settings, less those the command never reads (`omit`)."""
    _add_settings(parser, "agent", omit=omit)


# What only a run reads: the scene loop's rounds and blocks, and the curator's thinking.
RUN_ONLY = frozenset({"concurrency", "max_rounds", "curator_thinking", "curator_max_tokens"})


def add_store_command(
    commands: Any, name: str, *, help: str, **kwargs: Any
) -> argparse.ArgumentParser:
    """A subcommand that reads or writes a store and nothing else: `add_command` with --db."""
    parser = add_command(commands, name, help=help, **kwargs)
    add_store(parser)
    return parser


def add_agent_command(
    commands: Any,
    name: str,
    *,
    help: str,
    dagster: bool = False,
    omit: frozenset[str] = frozenset(),
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A subcommand that runs the agent: `add_command` with the corpus, the store with the
    site (and the story where `dagster`: it names a code location) and the agent's settings
    less `omit`, in that order."""
    parser = add_command(commands, name, help=help, **kwargs)
    add_corpus(parser)
    add_store(parser, site=True, dagster=dagster)
    add_agent(parser, omit=omit)
    return parser


def command_reads(offered: Any) -> set[str]:
    """The settings a command reads: those it offers as options (its parser is generated from
    what it reads), and the API key where it talks to a model server."""
    reads = set(offered)
    if "agent_url" in reads:
        reads |= {name for name in Settings.model_fields if cli_group(name) == ENV_ONLY}
    return reads


def settings_from_args(args: argparse.Namespace) -> Settings:
    """The settings, the options given on the command line taking precedence over the rest."""
    fields = set(Settings.model_fields)
    given = {key: value for key, value in vars(args).items() if key in fields}
    settings = load_settings(reads=command_reads(given), **given)
    option = db_option(args)  # --db, or where the path came from: TERRARIUM_DB, the config
    if settings.db.strip() and Path(settings.db).expanduser().is_dir():  # a store is a file
        raise InputError(f"{option} {settings.db} is a folder: give the annotator store's file")
    refuse_side_file(settings.db, option)  # `store.db-calls` for `store.db`: every command alike
    return settings


def db_option(args: argparse.Namespace) -> str:
    """How a message names where the store's path came from: `--db` when it was typed (or
    nothing set it: the default), else the variable or the configuration file that set it
    (`TERRARIUM_DB`, `terrarium.yaml's db`)."""
    if getattr(args, "db", None) is not None:
        return "--db"
    return setting_origin("db") or "--db"
