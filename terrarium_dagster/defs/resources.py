"""Resources: where the corpus, the annotator store and the agent are. Configuration only.

No state lives on a resource between runs: an asset turns the three resources into one
`terrarium_dagster.config.Settings` (`engine_settings`) and opens an `Engine` for the length of
its step. A field left empty falls back to what `Settings` reads itself (the `TERRARIUM_*`
variables, then `terrarium.yaml`, then its defaults), so the CLI and Dagster agree on every name.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
from pydantic import Field

from terrarium_dagster.config import Settings, load_settings
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.engine import open_corpus, open_store
from terrarium_dagster.exports.files import exports_beside
from terrarium_dagster.paths import default_export_dir
from terrarium_dagster.store.annotator import GlossaryStore


class CorpusResource(dg.ConfigurableResource):
    """The read-only story corpus (banished.db schema). Empty path: the bundled sample quest."""

    path: str = Field(default="", description="Corpus SQLite file; empty: the bundled sample.")
    url_template: str = Field(
        default="", description="Post URL template with {thread_id} and {post_id}."
    )

    def settings(self) -> Settings:
        return load_settings(
            corpus=Path(self.path) if self.path else None, url_template=self.url_template or None
        )

    def open(self) -> Corpus:
        """The corpus as the engine opens it (CorpusError naming what is wrong)."""
        return open_corpus(self.settings())


class StoreResource(dg.ConfigurableResource):
    """The annotator store, and where exports go.

    Empty path: `data/terrarium.db` of the checkout (or `$TERRARIUM_HOME/terrarium.db`). Exports go
    beside the store, in `<store folder>/exports/<thread key>/`, unless `exports_dir` says where.
    """

    path: str = Field(default="", description="Annotator store (SQLite file).")
    exports_dir: str = Field(
        default="", description="Folder for glossary exports; empty: `exports/` beside the store."
    )
    site_url: str = Field(
        default="", description="Where `terrarium serve` serves the exports (export links)."
    )
    network_store: bool = Field(
        default=False, description="Open a store on a network filesystem anyway (unsafe)."
    )
    story: str = Field(
        default="",
        description="Story name (TERRARIUM_STORY, read when the code location loads): "
        "the asset key prefix, partition set and pool.",
    )

    def settings(self) -> Settings:
        return load_settings(
            db=self.path or None, network_store=self.network_store or None, story=self.story or None
        )

    def export_root(self) -> Path:
        if self.exports_dir:
            return Path(self.exports_dir).expanduser()
        db = self.settings().db
        if db == ":memory:":
            return default_export_dir()
        return exports_beside(db)

    def open(self) -> GlossaryStore:
        """The store as the engine opens it (created on first use)."""
        return open_store(self.settings())

    def read(self) -> GlossaryStore:
        """The store as a reader opens it: read-only, never waiting for the writer (`InputError`
        when there is no store yet)."""
        return open_store(self.settings(), read_only=True)


class AgentResource(dg.ConfigurableResource):
    """The model the agent talks to.

    Without a URL the agent runs on the deterministic offline backend (no GPU, no network);
    pointing it at a vLLM server is one setting: `url` (or `TERRARIUM_AGENT_URL`). Empty or unset
    fields take the `Settings` defaults.
    """

    url: str = Field(
        default="",
        description="OpenAI-compatible server, e.g. http://gpu:8000/v1; replicas comma-separated.",
    )
    offline: bool = Field(default=False, description="Force the offline backend even with a URL.")
    model: str = Field(default="", description="Served model name; empty: the server's first.")
    api_key: str = Field(default="", description="Bearer token; set it with an EnvVar.")
    timeout_s: float | None = Field(
        default=None, description="Read timeout per HTTP attempt of a model call (retried)."
    )
    max_retries: int | None = Field(default=None, description="Retries on 5xx, 429, refused.")
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = Field(default=None, description="Completion tokens per call.")
    context_budget: int | None = Field(default=None, description="Model window to respect.")
    max_rounds: int | None = Field(default=None, description="Model calls per scene at most.")
    concurrency: int | None = Field(
        default=None, description="Model requests in flight at once (1: serial)."
    )
    top_k: int | None = None
    model_family: str = Field(default="", description="qwen3, llama3, mistral, other; empty: auto.")
    enable_thinking: bool | None = Field(
        default=None, description="Thinking in scene rounds, summaries, flush; unset: off."
    )
    curator_thinking: bool | None = Field(
        default=None, description="Thinking in the curator's review; unset: on."
    )
    curator_max_tokens: int | None = Field(
        default=None, description="Completion tokens of a curator request that thinks."
    )


def engine_settings(corpus: CorpusResource, store: StoreResource, agent: AgentResource) -> Settings:
    """The run settings the three resources describe; a bad value is a `ConfigError`. Each agent
    field bears its setting's name (`url`: `agent_url`); empty, unset or off leaves the setting
    to `Settings`."""
    given = {name: getattr(agent, name) for name in type(agent).model_fields}
    given["agent_url"] = given.pop("url")
    given["offline"] = given["offline"] or None
    return load_settings(
        corpus=Path(corpus.path) if corpus.path else None,
        url_template=corpus.url_template or None,
        db=store.path or None,
        site_url=store.site_url or None,
        **{name: None if value == "" else value for name, value in given.items()},
    )


def _from_env(name: str) -> str | dg.EnvVar:
    """An `EnvVar` when the variable is set (so the UI shows where a value came from), else ''."""
    return dg.EnvVar(name) if os.environ.get(name) else ""


@dg.definitions
def resources() -> dg.Definitions:
    # Steps run in the run's own process: runs are serialised by the pool anyway, and a step
    # subprocess would load Dagster and the code location a second time for nothing.
    return dg.Definitions(
        executor=dg.in_process_executor,
        resources={
            "corpus": CorpusResource(
                path=_from_env("TERRARIUM_CORPUS"),
                url_template=_from_env("TERRARIUM_URL_TEMPLATE"),
            ),
            "store": StoreResource(
                path=_from_env("TERRARIUM_DB"),
                exports_dir=_from_env("TERRARIUM_EXPORTS_DIR"),
                site_url=_from_env("TERRARIUM_SITE_URL"),
            ),
            "agent": AgentResource(
                url=_from_env("TERRARIUM_AGENT_URL"),
                model=_from_env("TERRARIUM_MODEL"),
                api_key=_from_env("TERRARIUM_API_KEY"),
            ),
        },
    )
