"""The reader's site kept as fresh as the store, for `serve` and `dev`."""

from __future__ import annotations

import math
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from terrarium_dagster.config import Settings
from terrarium_dagster.errors import InputError, TerrariumError

if TYPE_CHECKING:
    from terrarium_dagster.corpus.reader import Corpus


class SiteRefresher:
    """Keeps the reader's site (`<exports>/site/`) as fresh as the store: rebuilt when a run
    has written since the last build (checked at most every `every_s` seconds, on a request)."""

    def __init__(self, settings: Settings, root: Path, every_s: float = 2.0) -> None:
        self.settings = settings
        self.root = root
        self.every_s = every_s
        self._lock = threading.Lock()
        self._checked = -math.inf
        self._built: tuple[object, ...] | None = None
        self._warned = False
        self._said = ""  # the last line printed about a build
        self._not_yet = ""  # that the store is not written yet, said once the ports are bound

    def check_store(self) -> None:
        """Refuse (`InputError`: one line) a `--db` that is a file but not a sound store of its
        own corpus, before anything else is said of it; a store not written yet passes."""
        from terrarium_dagster.engine import open_store

        if not Path(self.settings.db).expanduser().is_file():
            return
        try:
            with open_store(self.settings, read_only=True):
                pass
        except InputError:
            raise
        except TerrariumError:  # a store busy or changing: its warning is refresh()'s
            return

    def corpus(self) -> Corpus:
        """The corpus the post pages come from: the one the store was built with, if any. A
        file that is not a store, a damaged store, or a corpus other than the store's own is
        refused (`InputError`: one line, nothing served); a store not written yet is not."""
        from terrarium_dagster.engine import open_corpus, open_store

        if Path(self.settings.db).expanduser().is_file():
            try:
                with open_store(self.settings, read_only=True) as store:
                    return open_corpus(self.settings, store)
            except InputError:
                raise
            except TerrariumError:  # a store busy or changing: its warning is refresh()'s
                return open_corpus(self.settings)
        corpus = open_corpus(self.settings)  # a bad corpus is refused before anything is said
        self._not_yet = (
            f"no annotator store at {self.settings.db} yet: the reader's site is built once "
            "a run writes it"
        )
        return corpus

    def say_not_yet(self) -> None:
        """Say that the store is not written yet, if `corpus` found so: once the ports are
        bound, so that a refusal (a port in use) is the only line said."""
        if self._not_yet:
            print(self._not_yet, flush=True)
            self._not_yet = ""

    def settle(self) -> None:
        """Wait for a build in progress (a request's, on a server thread) to end: the server
        stops with the store closed and no staged folder left."""
        with self._lock:
            pass

    def refresh(self) -> None:
        from terrarium_dagster.engine import open_corpus, open_store
        from terrarium_dagster.exports.site import SITE_DIR, build_site

        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.every_s:
                return
            self._checked = now
            if not Path(self.settings.db).expanduser().is_file():
                return
            try:
                with open_store(self.settings, read_only=True) as store:
                    states = store.progress.thread_states()
                    stamp = (
                        store.history.last_revision_id(),
                        tuple((state.thread_key, state.status) for state in states),
                    )
                    if stamp == self._built:
                        return
                    with open_corpus(self.settings, store) as corpus:
                        site = build_site(store, corpus, self.root / SITE_DIR)
                self._built = stamp
                said = f"built the reader's site: {site.summary()}"
                if said != self._said:  # a rebuild that changed no count is not news
                    print(said, flush=True)
                    self._said = said
            except (TerrariumError, OSError) as exc:  # still serve the exports and the posts
                if not self._warned:  # (OSError: a folder that cannot be written)
                    reason = exc if isinstance(exc, TerrariumError) else _cannot_write(exc)
                    print(f"terrarium: warning: no reader's site ({reason})", file=sys.stderr)
                    self._warned = True


def _cannot_write(exc: OSError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    return f"cannot write{where}: {exc.strerror or exc}"
