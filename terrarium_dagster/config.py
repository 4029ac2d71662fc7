"""Run settings: command line > environment (`TERRARIUM_*`) > `terrarium.yaml` > defaults.

One pydantic model serves the CLI and the Dagster resources, so both read the same names. A bad
value is a `ConfigError` with one line naming the setting, never a traceback.
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from terrarium_dagster.errors import ConfigError
from terrarium_dagster.paths import default_store_path

CONFIG_FILE_ENV = "TERRARIUM_CONFIG"
DEFAULT_CONFIG_FILE = "terrarium.yaml"

# Where a setting shows on the command line: the option group the CLI generates it into
# (`corpus`, `store`, `agent`), or `ENV_ONLY` for a secret that must not sit in a process list.
# A field without one is an `agent` option. The CLI flags, the README table and the Dagster
# resources are checked against these fields by tests/test_settings_single_source.py.
ENV_ONLY = "env-only"
# The kind of error a value has only beside another setting's (max_tokens beside the budget):
# judged with the settings as run, where an option given may be the other one.
ACROSS_SETTINGS = "across_settings"


def cli_group(name: str) -> str:
    """The CLI option group of setting `name`."""
    extra = Settings.model_fields[name].json_schema_extra
    group = extra.get("cli") if isinstance(extra, dict) else None
    return str(group) if group else "agent"


class Settings(BaseSettings):
    """Everything a run needs to know. Field names are the `TERRARIUM_<NAME>` variables."""

    model_config = SettingsConfigDict(
        env_prefix="TERRARIUM_",
        env_ignore_empty=True,  # `TERRARIUM_DB=` is unset, as `TERRARIUM_HOME=` is
        extra="forbid",
        validate_default=True,
    )

    corpus: Path | None = Field(
        default=None,
        description="Corpus SQLite file (a forum quest's, or a book `terrarium import` made); "
        "unset: the one the store was built from (on the command line), else the bundled "
        "sample.",
        json_schema_extra={"cli": "corpus", "shown_default": "the store's, else bundled sample"},
    )
    db: str = Field(
        default_factory=lambda: str(default_store_path()),
        description="Annotator store: a SQLite file path.",
        json_schema_extra={"cli": "store", "shown_default": "`data/terrarium.db`"},
    )
    network_store: bool = Field(
        default=False,
        description=(
            "Open a store on a network filesystem (NFS, SMB, FUSE) anyway; refused otherwise: "
            "SQLite's WAL needs one host's local disk."
        ),
        json_schema_extra={"cli": "store"},
    )
    story: str | None = Field(
        default=None,
        pattern=r"^[a-z][a-z0-9_]{0,39}$",
        description=(
            "Story name when several stories share one Dagster: its code location's asset key "
            "prefix, partition set and pool."
        ),
        json_schema_extra={"cli": "store"},
    )
    url_template: str | None = Field(
        default=None,
        description=(
            "Public post URL template with {thread_id} and {post_id}; unset: links go to the "
            "post pages `terrarium serve` serves at `site_url`."
        ),
        json_schema_extra={"cli": "corpus"},
    )
    agent_url: str | None = Field(
        default=None,
        description=(
            "Base URL of an OpenAI-compatible (vLLM) server; several replicas of one model "
            "comma-separated (the least busy answers)."
        ),
    )
    offline: bool = Field(
        default=False,
        description=(
            "Use the in-process rule-based offline backend (no LLM, deterministic); without it a "
            "run needs `agent_url`."
        ),
    )
    model: str | None = Field(default=None, description="Served model name; default: the first.")
    api_key: SecretStr | None = Field(
        default=None,
        description="Bearer token (or `OPENAI_API_KEY`); environment or config file only.",
        json_schema_extra={"cli": ENV_ONLY},
    )
    context_budget: int = Field(
        default=32768, ge=2048, description="Model window the run respects (prompt + max_tokens)."
    )
    max_tokens: int = Field(default=1024, ge=64, description="Completion tokens per call.")
    temperature: float | None = Field(
        default=None,
        ge=0.0,
        le=2.0,
        description="Sampling temperature; unset: the advice for `model_family`.",
    )
    top_p: float | None = Field(
        default=None, gt=0.0, le=1.0, description="Nucleus sampling; unset: the family's advice."
    )
    top_k: int | None = Field(
        default=None, ge=-1, description="Top-k sampling (vLLM); unset: the family's advice."
    )
    model_family: str = Field(
        default="auto",
        description=(
            "qwen3, llama3, mistral or other: sampling advice and the thinking switch; auto: "
            "from the served model's name."
        ),
    )
    enable_thinking: bool | None = Field(
        default=None, description="Thinking in scene rounds, summaries, flush (Qwen3); unset: off."
    )
    curator_thinking: bool | None = Field(
        default=None, description="Thinking in the curator's review (Qwen3); unset: on."
    )
    curator_max_tokens: int = Field(
        default=4096,
        ge=64,
        description="Completion tokens of a curator request that thinks (at most budget/4).",
    )
    max_rounds: int = Field(default=6, ge=1, le=50, description="Model calls per scene at most.")
    concurrency: int = Field(
        default=16,
        ge=1,
        le=256,
        description=(
            "Model requests in flight at once: a thread's scenes are drafted in blocks of this "
            "many, committed in story order; 1 is the serial run. Unset with `offline`: 1."
        ),
    )
    timeout_s: float = Field(
        default=180.0,
        gt=0,
        description=(
            "Read timeout per HTTP attempt of a model call; a timeout is retried (max_retries), "
            "so a server that never answers stops the run after (max_retries + 1) x this."
        ),
    )
    max_retries: int = Field(
        default=5, ge=0, le=20, description="Retries on refused connections, timeouts, 429, 5xx."
    )
    seed: int | None = Field(default=None, description="Sampling seed sent to the server.")
    site_url: str = Field(
        default="http://127.0.0.1:8765",
        description="Where `terrarium serve` serves the exports (Dagster's export links).",
        json_schema_extra={"cli": "store"},
    )

    @field_validator("db", "corpus", mode="before")
    @classmethod
    def _names_a_file(cls, value: object) -> object:
        # `--db ''` was 'no annotator store at  ', `--corpus ''` the corpus '.' (a folder)
        if isinstance(value, str) and not value.strip():
            raise ValueError("names no file (give a path, or leave it out for the default)")
        return value

    @field_validator("site_url")
    @classmethod
    def _site_url_scheme(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("agent_url")
    @classmethod
    def _url_scheme(cls, value: str | None) -> str | None:
        if value is None:
            return value
        urls = [part.strip() for part in value.split(",") if part.strip()]
        if not urls:
            raise ValueError("names no server (e.g. http://gpu-box:8000/v1)")
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"{url!r} must start with http:// or https://")
            if not urlsplit(url).hostname:
                raise ValueError(f"{url!r} names no host (e.g. http://gpu-box:8000/v1)")
        return ",".join(urls)

    @field_validator("model_family")
    @classmethod
    def _known_family(cls, value: str) -> str:
        families = ("auto", "qwen3", "llama3", "mistral", "other")
        value = value.strip().lower()
        if value not in families:
            raise ValueError(f"must be one of {', '.join(families)}, not {value!r}")
        return value

    @field_validator("temperature", "top_p", "timeout_s")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"must be a finite number, not {value}")
        return value

    @field_validator("max_tokens")
    @classmethod
    def _under_half_the_budget(cls, value: int, info: ValidationInfo) -> int:
        # judged as max_tokens' own (context_budget comes before it): a command that never
        # reads max_tokens is not refused over it
        budget = info.data.get("context_budget")
        if budget is not None and value >= budget // 2:
            raise PydanticCustomError(
                ACROSS_SETTINGS,
                "must be under half the context budget ({budget}), not {value}",
                {"budget": budget, "value": value},
            )
        return value

    @model_validator(mode="after")
    def _backend_choice(self) -> Settings:
        if self.offline and "concurrency" not in self.model_fields_set:
            # The offline backend answers in this process, on the interpreter's one lock:
            # requests side by side overlap nothing and cost the drafting's work (about twice
            # the CPU of a serial run on the sample). Asked for, blocks are drafted as ever.
            self.concurrency = 1
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = _config_file()
        if config_file is not None:
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=config_file))
        return tuple(sources)


def _config_file() -> Path | None:
    named = os.environ.get(CONFIG_FILE_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise ConfigError(f"{CONFIG_FILE_ENV} names {path}, which is not a file")
        return path
    local = Path.cwd() / DEFAULT_CONFIG_FILE
    return local if local.is_file() else None


def yaml_problem(exc: Exception) -> str:
    """Why a YAML file (the configuration, a gold list) could not be read, in one line: a YAML
    error as the line and column it names and its problem (not PyYAML's excerpt with a caret
    under it), a file that is not text as that (not Python's codec message)."""
    if isinstance(exc, UnicodeDecodeError):  # a database, a PDF, a UTF-16 file given for one
        byte = exc.object[exc.start]
        return f"not UTF-8 text (byte {byte:#04x} at {exc.start}): give a YAML file"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None)
    if isinstance(exc, yaml.MarkedYAMLError) and mark is not None and problem:
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem} (not valid YAML)"
    return " ".join(str(exc).split())


def _check_config_file() -> dict[Any, Any]:
    """A config file must be a YAML mapping of settings (not a list, not a scalar): what it
    sets (empty without one)."""
    path = _config_file()
    if path is None:
        return {}
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read configuration file {path}: {yaml_problem(exc)}") from None
    if document is not None and not isinstance(document, dict):
        raise ConfigError(
            f"configuration file {path} must be a mapping of settings (name: value), "
            f"not a {type(document).__name__}"
        )
    return document or {}


def _errors_in(
    named: set[str], values: dict[str, Any], *, across: bool = False
) -> list[ErrorDetails]:
    """pydantic's errors about the settings `named` when settings are made from `values` over
    the other sources: each judged even where a source above gives the same setting (a check
    across settings waits for the settings as run, unless `across`)."""
    if not named:
        return []
    try:
        Settings(**values)
    except ValidationError as exc:
        return [
            error
            for error in exc.errors()
            if error["loc"]
            and error["loc"][0] in named
            and (across or error["type"] != ACROSS_SETTINGS)
        ]
    except (OSError, ValueError, yaml.YAMLError):  # the file's own problem, said by the caller
        return []
    return []


def _environment_settings() -> set[str]:
    """The settings the environment sets (`TERRARIUM_<NAME>`, in any case). A variable set
    empty sets nothing (`TERRARIUM_CORPUS=` was the corpus ".", `TERRARIUM_DB=` the store "",
    `TERRARIUM_OFFLINE=` a bad boolean whose value the message did not show)."""
    variables = {key.upper() for key, value in os.environ.items() if value}
    return {name for name in Settings.model_fields if f"TERRARIUM_{name.upper()}" in variables}


def _with_variable(error: ErrorDetails) -> ErrorDetails:
    """An error about a value the environment sets, named with its variable."""
    name = str(error["loc"][0])
    return {**error, "loc": (f"{name} (TERRARIUM_{name.upper()})",)}


def _with_file(error: ErrorDetails) -> ErrorDetails:
    """An error about a value the configuration file sets, named with the file."""
    where = _config_file()
    name = str(error["loc"][0])
    return {**error, "loc": (f"{name} (in {where})" if where else name,)}


def _unread_and_bad(read: set[str], document: dict[str, Any]) -> set[str]:
    """The settings outside `read` to which the environment or the configuration file gives a
    bad value."""
    unread = set(Settings.model_fields) - read
    in_environment = _errors_in(unread & _environment_settings(), {}, across=True)
    in_file = _errors_in(unread & set(document), document, across=True)
    return {str(error["loc"][0]) for error in [*in_environment, *in_file]}


def _with_source(
    error: ErrorDetails, from_file: set[str], from_environment: set[str]
) -> ErrorDetails:
    """An error about the settings as run, named with where its value came from when not from
    the command line: the configuration file or the environment."""
    name = error["loc"][0] if error["loc"] else None
    if name in from_file:
        return _with_file(error)
    if name in from_environment:
        return _with_variable(error)
    return error


def setting_origin(name: str) -> str | None:
    """Where the value of setting `name` in use comes from when no option gave it, as a message
    names it: its variable (``TERRARIUM_DB``), else the configuration file that sets it
    (``terrarium.yaml's db``); None when neither does (the default)."""
    if name in _environment_settings():
        return f"TERRARIUM_{name.upper()}"
    if name in _check_config_file():
        return f"{_config_file()}'s {name}"
    return None


def load_settings(*, reads: Collection[str] | None = None, **overrides: Any) -> Settings:
    """Settings from the sources, with `overrides` (None values ignored) taking precedence. A
    bad value in the configuration file or the environment is an error even where another
    source overrides it. `reads` (a command's settings; None: all) limits the errors to the
    settings the caller reads: a bad value of another one is no error, that setting keeps its
    default (a bad TERRARIUM_CONCURRENCY stops `run`, not `status`)."""
    given = {key: value for key, value in overrides.items() if value is not None}
    document = {str(key): value for key, value in _check_config_file().items()}
    read = set(Settings.model_fields) if reads is None else set(reads)
    defaults = {
        name: Settings.model_fields[name].get_default(call_default_factory=True)
        for name in (_unread_and_bad(read, document) if reads is not None else ())
    }
    document = {key: value for key, value in document.items() if key not in defaults}
    given |= {name: value for name, value in defaults.items() if name not in given}
    in_environment = _errors_in(_environment_settings() & read, defaults)
    wrong = {error["loc"][0] for error in in_environment}  # said with their variables
    from_file = set(document) - set(given) - _environment_settings()
    in_file = [_with_file(error) for error in _errors_in(set(document) & read, document)]
    overridden = in_file + list(map(_with_variable, in_environment))
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        errors = [
            _with_source(error, from_file, _environment_settings() - set(given))
            for error in exc.errors()
            if not error["loc"] or error["loc"][0] not in wrong
        ]
        said = {error["loc"] for error in errors}
        raise ConfigError(
            describe_errors([*errors, *(e for e in overridden if e["loc"] not in said)])
        ) from None
    except (OSError, ValueError, yaml.YAMLError) as exc:  # unreadable or malformed YAML
        where = _config_file()
        raise ConfigError(f"cannot read configuration file {where}: {yaml_problem(exc)}") from None
    if overridden:
        raise ConfigError(describe_errors(overridden))
    return settings


def describe_validation_error(exc: ValidationError) -> str:
    """One line: each bad field with pydantic's reason."""
    return describe_errors(exc.errors())


def describe_errors(errors: list[ErrorDetails]) -> str:
    """One line: each of pydantic's `errors` as its field and reason."""
    parts = []
    for error in errors:
        where = ".".join(str(item) for item in error["loc"]) or "settings"
        if error["type"] == "extra_forbidden":  # a misspelt key of the configuration file
            name = where.split(" (")[0]  # "modle (in terrarium.yaml)"
            close = difflib.get_close_matches(name, list(Settings.model_fields), n=1)
            hint = f"did you mean {close[0]}?" if close else "the README's table lists them"
            parts.append(f"{where}: no such setting ({hint})")
            continue
        message = error["msg"].removeprefix("Value error, ")  # pydantic's word for our own
        given = error.get("input")
        shown = isinstance(given, str | int | float) and bool(
            re.search(rf"(?<!\w){re.escape(str(given))}(?!\w)", message)
        )
        if isinstance(given, str | int | float) and where != "api_key" and not shown:
            message += f" (given {given!r})"  # never the API key's secret
        parts.append(f"{where}: {message}")
    return "invalid configuration: " + "; ".join(parts)


def settings_table() -> str:
    """The README's configuration table, generated from `Settings` (a test keeps them equal)."""
    rows = [
        "| setting | env | command line | default | meaning |",
        "|---|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if "shown_default" in extra:
            default = str(extra["shown_default"])
        elif field.default is None:
            default = "unset"
        else:
            default = f"`{field.default}`".replace("`False`", "`false`").replace("`True`", "`true`")
        flag = "—" if cli_group(name) == ENV_ONLY else f"`--{name.replace('_', '-')}`"
        rows.append(
            f"| `{name}` | `TERRARIUM_{name.upper()}` | {flag} | {default} | {field.description} |"
        )
    return "\n".join(rows)
