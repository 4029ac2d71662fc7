"""Errors of the engine.

Every error carries one clear line for the user. `InputError` and its subclasses are the user's to
fix (bad corpus, bad config, bad arguments): the CLI exits 2 on them. Everything else that derives
from `TerrariumError` is a runtime failure: the CLI exits 1.
"""


class TerrariumError(Exception):
    """Base class of every error the engine raises on purpose.

    `failed_attempts`: on an error out of a model call, the HTTP attempts the client retried
    before it (`model.client.FailedAttempt`), each recorded as a call of its own."""

    exit_code: int = 1
    failed_attempts: tuple[object, ...] = ()
    # The setting that would let the refused operation proceed (e.g. "rewind"), when there is
    # one: each surface names it its own way (the CLI's flag, Dagster's run config field).
    setting: str | None = None

    def __init__(self, *args: object, setting: str | None = None) -> None:
        super().__init__(*args)
        if setting is not None:
            self.setting = setting


class InputError(TerrariumError):
    """Bad input from the user: a corpus, a configuration value, an argument."""

    exit_code = 2


class CorpusError(InputError):
    """The corpus is missing, unreadable, not SQLite, or not in the banished.db schema."""


class ConfigError(InputError):
    """A configuration value is invalid."""


class StoreError(TerrariumError):
    """The annotator store refused an operation."""


class DiskSpaceError(InputError):
    """The disk (or a file size limit) leaves no room for the annotator store's writes: the user
    frees space or puts the store elsewhere (the CLI exits 2); nothing half-written is kept."""


class WriterLeaseError(InputError):
    """Another live process holds the store's one-writer lease (the CLI exits 2 at once)."""


class DamagedStoreError(InputError):
    """The store's file is damaged (or not a store): refused before anything is written, one line
    naming the damage and the way back (`terrarium recover`); the CLI exits 2."""


class CorpusAsStoreError(InputError):
    """A corpus (its thread and post tables) given where the annotator store belongs; `where`
    names the file. Each surface says how to give it instead (the CLI: as --corpus, where the
    command takes it)."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.refusal = f"{where} is a corpus, not an annotator store; nothing was written"
        super().__init__(f"{self.refusal}; give it as the corpus, and the store's file as store")


class DuplicateTermError(StoreError):
    """A term or alias collides with a live entry."""


class EntryNotFoundError(StoreError):
    """No entry with that id or term."""


class AgentError(TerrariumError):
    """The model server failed persistently or answered something unusable."""


class ContextOverflowError(AgentError):
    """The server refused the request because the prompt exceeds the model's context length."""


class NoAnswerError(AgentError):
    """The model's replies decided nothing (empty, reasoning only, cut off by max_tokens), even
    asked again with room to answer: the run stops rather than take silence for a decision."""


class BudgetError(AgentError):
    """The context cannot be made to fit the token budget."""


class SceneTooLarge(BudgetError):
    """The current scene's request cannot be made to fit beside the context: the scene loop
    reads that scene again in smaller parts (and stops only when the smallest part fails)."""


class OrderError(InputError):
    """Threads must be annotated in story order; this one is out of order."""


class PredecessorNotAnnotated(OrderError):
    """`thread` (a key) cannot be annotated yet: `missing`, the first earlier thread, is not
    annotated. A caller that knows the missing thread's annotation is on its way (Dagster: a run
    queued or running for it) may wait and ask again; nothing was written."""

    def __init__(self, message: str, *, thread: str, missing: str) -> None:
        super().__init__(message)
        self.thread = thread
        self.missing = missing


class Interrupted(TerrariumError):
    """A stop was requested (SIGINT/SIGTERM): the current scene was rolled back."""

    exit_code = 130
