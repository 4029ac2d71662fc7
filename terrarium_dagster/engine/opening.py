"""Opening a run: the corpus, the store (a writer takes its lease), the model client.

Readers call `open_corpus` and `open_store` alone; a writer opens all three through
`open_writer`, the one place the store's writer lease is taken, and gives them back through
`release_writer`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from terrarium_dagster.backends.offline import OFFLINE_URL, OfflineBackend
from terrarium_dagster.config import Settings
from terrarium_dagster.corpus.identity import IDENTITY_META, CorpusIdentity, corpus_identity
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.sample import sample_corpus_path
from terrarium_dagster.errors import ConfigError, DiskSpaceError, InputError, WriterLeaseError
from terrarium_dagster.model.client import ChatClient, ClientConfig
from terrarium_dagster.model.replicas import ModelClient, ReplicaPool, split_urls
from terrarium_dagster.model.server import require_tools, server_info
from terrarium_dagster.paths import default_store_path, unwritable_reason
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.filesystem import refusal as network_refusal
from terrarium_dagster.store.integrity import empty_store_error, refuse_not_a_store

CORPUS_META = "corpus_path"
CORPUS_IDENTITY_META = IDENTITY_META  # corpus.identity: which corpus the store belongs to
URL_TEMPLATE_META = "url_template"
# Templates earlier versions recorded for the bundled sample: a host that does not exist.
LEGACY_TEMPLATES = frozenset({"https://quest.example/sample/{thread_id}#{post_id}"})


def open_corpus(settings: Settings, store: GlossaryStore | None = None) -> Corpus:
    """The corpus the settings name; for a reader of `store`, unless told otherwise, the corpus
    and URL template the store was built with (recorded by the run that wrote it). Without a
    post URL template, source links go to the post pages `terrarium serve` serves at
    `settings.site_url` (`corpus.quote_links`)."""
    recorded = store.get_meta(CORPUS_META) if store is not None else None
    recorded_template = store.get_meta(URL_TEMPLATE_META) if store is not None else None
    if recorded_template in LEGACY_TEMPLATES:
        recorded_template = None  # an old store's made-up sample host: link the served posts
    site = settings.site_url
    if settings.corpus is None and recorded and Path(recorded).is_file():
        template = settings.url_template or recorded_template
        corpus = Corpus(recorded, url_template=template, site_url=site)
    elif settings.corpus is None:
        corpus = Corpus(sample_corpus_path(), url_template=settings.url_template, site_url=site)
    else:
        template = settings.url_template
        if template is None and recorded and Path(recorded).resolve() == settings.corpus.resolve():
            template = recorded_template
        corpus = Corpus(settings.corpus, url_template=template, site_url=site)
    if store is not None:
        try:
            check_corpus_identity(store, corpus)
        except InputError:
            corpus.close()
            if settings.corpus is None and recorded and not Path(recorded).is_file():
                raise InputError(
                    f"annotator store {store.where} was built from the corpus {recorded}, which "
                    "is not there any more; nothing was written; give --corpus where it is now "
                    "(a run given it records the new place)"
                ) from None
            raise
        except BaseException:
            corpus.close()
            raise
    return corpus


def record_moved_corpus(store: GlossaryStore, settings: Settings, corpus: Corpus) -> None:
    """A writer given --corpus for a store whose recorded corpus is gone (moved, renamed; its
    identity was checked) records where it is now, so the readers find it without --corpus."""
    recorded = store.get_meta(CORPUS_META)
    if settings.corpus is not None and recorded and not Path(recorded).is_file():
        store.set_meta(CORPUS_META, str(corpus.path.resolve()))


def check_corpus_identity(store: GlossaryStore, corpus: Corpus) -> None:
    """Refuse (one line, InputError) a corpus other than the one the store was built from, as
    the store recorded it (`corpus.identity`); a store that recorded none accepts any."""
    recorded = store.get_meta(CORPUS_IDENTITY_META)
    if recorded is None:
        return
    built_from = CorpusIdentity.model_validate_json(recorded)
    current = corpus_identity(corpus)
    if not built_from.matches(current):
        raise InputError(
            f"annotator store {store.where} belongs to the corpus {built_from.describe()}, not "
            f"to {corpus.path.name} {current.describe()} ({built_from.difference(current)}); "
            "nothing was written; give --corpus "
            "the store's own corpus, or a new --db for this one"
        )


def adopt_corpus_identity(store: GlossaryStore, corpus: Corpus) -> None:
    """Record which corpus the store belongs to (a store from before identities adopts the
    corpus of its next run; a grown corpus refreshes its first threads)."""
    identity = corpus_identity(corpus).model_dump_json()
    if store.get_meta(CORPUS_IDENTITY_META) != identity:
        store.set_meta(CORPUS_IDENTITY_META, identity)


def open_store(
    settings: Settings, *, must_exist: bool = False, read_only: bool = False
) -> GlossaryStore:
    """The annotator store; `must_exist` (readers: status, export, lineage, why) refuses to
    create an empty one where the user named a file that is not there. `read_only` (status,
    export, lineage, snapshots, score, serve) opens it so that nothing is written and no writer
    is waited for; it works on a read-only file or folder."""
    if settings.db != ":memory:":
        path = Path(settings.db).expanduser()
        if (must_exist or read_only) and not path.is_file():
            raise InputError(f"no annotator store at {settings.db} (run `terrarium run` first)")
        if read_only:
            return GlossaryStore(settings.db, read_only=True)
        if must_exist:  # notes as --db: a new file name is no use to a command that needs a store
            refuse_not_a_store(path, settings.db, writer=False)
            if path.stat().st_size == 0:  # (`why`, `undo` made a store of it, then found nothing)
                raise empty_store_error(settings.db)
        refused = None if settings.network_store else network_refusal(settings.db)
        if refused is not None:
            raise InputError(refused)
        reason = None if path.exists() else unwritable_reason(path, folder=False)
        if reason is not None:
            raise InputError(f"cannot create annotator store {settings.db}: {reason}")
        try:
            path.resolve().parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"cannot create the folder of annotator store {settings.db}: {exc.strerror}"
            ) from None
    return GlossaryStore(settings.db)


def check_store_folder(db: str) -> None:
    """A store the command line names is made in a folder that exists: a mistyped folder is not
    made (as `--out` of import, export and recover), the store is written where it was meant.
    Only the default store's folder (`paths.default_store_path`: `$TERRARIUM_HOME`, the
    checkout's `data/` or the user's data folder) is made on first use. Called for a `--db`
    typed on the command line only: `TERRARIUM_DB` and the configuration file are a
    deployment's settings (a code location's, `terrarium dev`'s), whose folder `open_store`
    makes."""
    if db == ":memory:":
        return
    path = Path(db.removeprefix("sqlite:///")).expanduser()
    if path.parent.is_dir() or path.exists():
        return
    reason = unwritable_reason(path, folder=False)  # a file on the way: named as such
    if reason is not None:
        raise InputError(f"cannot create annotator store {db}: {reason}")
    if path.absolute() == default_store_path().expanduser().absolute():
        return
    raise InputError(
        f"--db {db}: no folder {path.parent}; nothing was written (make it first, or give a "
        "path in a folder that exists)"
    )


def open_client(settings: Settings) -> ReplicaPool:
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    config = ClientConfig(
        # offline wins over a URL left in the settings (a story switched to offline: true)
        base_url=(
            split_urls(settings.agent_url)[0]
            if settings.agent_url and not settings.offline
            else OFFLINE_URL
        ),
        model=settings.model,
        api_key=api_key,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
    )  # sampling and thinking go per call kind (model.sampling, ModelSession.request_options)
    if settings.offline:
        backend = OfflineBackend(max_model_len=settings.context_budget)
        return ReplicaPool([ChatClient(config, transport=backend)])
    require_backend(settings)
    return ReplicaPool.from_config(config, split_urls(settings.agent_url or ""))


def require_backend(settings: Settings) -> None:
    """The backend is an explicit choice: a model server's URL, or the offline backend."""
    if not settings.offline and not settings.agent_url:
        raise ConfigError(
            "no model server configured: set TERRARIUM_AGENT_URL (or --agent-url), or choose "
            "the rule-based offline backend explicitly with TERRARIUM_OFFLINE=1 (or --offline)"
        )


def open_writer(
    settings: Settings,
    run_id: str,
    client: ModelClient | None,
    *,
    model: bool,
    recorded_corpus: bool = False,
    must_exist: bool = False,
    check: Callable[[Corpus, GlossaryStore], None] | None = None,
) -> tuple[Corpus, GlossaryStore, ModelClient | None]:
    """Open a writer's corpus, store (taking its writer lease) and model client. With
    ``model=False`` (an edit such as an undo) no model is configured or needed, and the store
    must exist. Without a model, or with ``recorded_corpus`` for a store that exists, the
    corpus is the one the store records unless the settings name one (a store built from an
    imported book resumes on that book, not on the bundled sample); a new store is created
    only once the corpus it is for has opened. `must_exist` (an edition, which rewrites what a
    run wrote) refuses a store that is not there as a model-less edit does. `check`: the
    command's own input checks (a thread range, an undo's id) against the corpus and the store
    as they stand, before the lease is taken: a refusal writes nothing, not even the lease."""
    if model and client is None:  # refused before the corpus (the sample's cache) is made
        require_backend(settings)
    existing = settings.db != ":memory:" and Path(settings.db).expanduser().is_file()
    store_first = (
        not model or must_exist or (recorded_corpus and existing and settings.corpus is None)
    )
    if not store_first:
        corpus = open_corpus(settings)
        try:
            store = open_store(settings)
        except BaseException:
            corpus.close()
            raise
    else:  # (with a model the store exists: a run or an edition may name a new one instead)
        store = open_store(settings, must_exist=not model or must_exist)
        try:
            corpus = open_corpus(settings, store)
        except BaseException:
            store.close()
            raise
    try:
        if not store_first:  # (else open_corpus checked it)
            check_corpus_identity(store, corpus)
        if model:
            corpus.require_story()
        if check is not None:
            check(corpus, store)
        # The one place a writer opens the store: a second live writer is refused here.
        store.runs.acquire_writer_lease(run_id)
        record_moved_corpus(store, settings, corpus)
    except BaseException as exc:
        store.close()
        corpus.close()
        if store.created and not isinstance(exc, WriterLeaseError):
            store.discard()  # a store created for nothing is not kept
            if isinstance(exc, DiskSpaceError):
                raise DiskSpaceError(f"{exc}; nothing was created") from exc
        raise
    try:
        chat = client or (open_client(settings) if model else None)
        if chat is not None:  # what the server is, said once; one without tools is refused
            require_tools(server_info(chat))
    except BaseException:
        try:
            store.runs.release_writer_lease(run_id)
        finally:
            store.close()
            corpus.close()
            store.discard()  # (a store it did not create is only closed)
        raise
    return corpus, store, chat


def release_writer(
    store: GlossaryStore, corpus: Corpus, client: ModelClient | None, run_id: str
) -> None:
    """Give back what `open_writer` took: the writer lease, then the client, store and corpus."""
    try:
        store.runs.release_writer_lease(run_id)
    finally:
        if client is not None:
            client.close()
        store.close()
        corpus.close()
