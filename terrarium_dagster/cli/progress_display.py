"""The progress display of `terrarium run`: a live line on a terminal, a line per thread
otherwise, and the log handler that writes records above the live line."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from terrarium_dagster.cli.common import counted
from terrarium_dagster.corpus.units import thread_name


class Progress:
    """What a run is doing, for whoever watches it.

    Every figure counts this run's work, as the lines say ("this run:"): a resumed run starts
    from nothing, its threads and scenes the ones left when it began.
    On a terminal: one live line for the whole range — a bar of threads done, scenes, entries
    new and updated, tokens per second, model requests in flight (for a served model: the
    offline backend answers in-process, one at a time), and the time left at the recent pace.
    Otherwise (a log, a pipe): one line per finished thread, so a days-long run leaves a
    readable record. `interrupted` ends the live line before the run says it stopped.
    """

    BAR = 20

    def __init__(self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.clock = clock
        self.started = clock()
        self.threads_total = 0
        self.unit = "thread"  # what the corpus's threads are ("chapter": an imported book)
        self.scenes_total = 0
        self.in_flight: Callable[[], int] | None = None
        self.figures: dict[str, Any] = {
            "threads": 0,
            "scenes": 0,
            "created": 0,
            "updated": 0,
            "prompt": 0,
            "cached": 0,
            "completion": 0,
        }
        self._thread_started = clock()
        self._thread_scenes = 0
        self._ended = False
        self.heading: str | None = None  # said before the first event: once the run has begun
        self.lock = threading.RLock()  # a signal handler may log while the bar is drawn

    def plan(self, threads: int, scenes: int, in_flight: Callable[[], int] | None) -> None:
        """The range the run covers (threads and scenes still to do) and how to read the number
        of requests in flight (None: not shown)."""
        self.threads_total, self.scenes_total, self.in_flight = threads, scenes, in_flight
        self.started = self._thread_started = self.clock()

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        with self.lock:
            if self.heading is not None:
                heading, self.heading = self.heading, None
                self.note(heading)
            f = self.figures
            if event == "scene" and data.get("scene_ended", True):  # a part is not a scene
                f["scenes"] += 1
                self._thread_scenes += 1
            if event == "scene":
                for key in ("created", "updated"):
                    f[key] += int(data.get(key, 0))
                for key in ("prompt", "cached", "completion"):  # run totals
                    f[key] = int(data.get(key, 0))
            elif event == "thread":
                f["threads"] += 1
            if self.live:
                self.stream.write("\r\x1b[2K" + self._bar())
                self._ended = event == "thread" and f["threads"] >= self.threads_total
                if self._ended:
                    self.stream.write("\n")
            elif event == "thread":
                self.stream.write(self._thread_line(str(data.get("thread_key", ""))) + "\n")
                self._thread_scenes = 0
                self._thread_started = self.clock()
            else:
                return
            self.stream.flush()

    def _rate(self) -> float:
        """Completion tokens per second since the run's first scene."""
        spent = self.clock() - self.started
        return self.figures["completion"] / spent if spent > 0 else 0.0

    def _eta(self) -> str:
        done, total = self.figures["scenes"], self.scenes_total
        if not done or total <= done:
            return "—"
        left = (self.clock() - self.started) / done * (total - done)
        hours, rest = divmod(int(left), 3600)
        return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"

    def _bar(self) -> str:
        f = self.figures
        total = max(1, self.threads_total)
        filled = min(self.BAR, int(self.BAR * f["threads"] / total))
        scenes = f"{f['scenes']}/{self.scenes_total}" if self.scenes_total else str(f["scenes"])
        flight = f" · {self.in_flight()} in flight" if self.in_flight is not None else ""
        return (
            f"[{'#' * filled}{'.' * (self.BAR - filled)}] this run: {self.unit}s {f['threads']}/"
            f"{self.threads_total} · scenes {scenes} · entries {self._entries()}"
            f" · {self._rate():.0f} tok/s{flight} · ETA {self._eta()}"
        )

    def _entries(self) -> str:
        return f"{self.figures['created']} new, {self.figures['updated']} updated"

    def _named(self, key: str) -> str:
        """ "thread t00004-145", or a book's "chapter 5 (t00004-145)"."""
        book = self.unit == "chapter"
        return thread_name(key, book=True) if book else f"{self.unit} {key}"

    def _thread_line(self, key: str) -> str:
        f = self.figures
        spent = self.clock() - self._thread_started
        rate = f["cached"] / f["prompt"] if f["prompt"] else 0.0
        return (
            f"{self._named(key)} done ({f['threads']}/{self.threads_total}): "
            f"{counted(self._thread_scenes, 'scene', 'scenes')} in {spent:.1f}s · this run: "
            f"scenes {f['scenes']}/{self.scenes_total} · entries {self._entries()} · tokens "
            f"{f['prompt']} prompt + {f['completion']} completion ({rate:.0%} cached) · "
            f"{self._rate():.0f} tok/s · "
            f"ETA {self._eta()}"
        )

    def note(self, line: str) -> None:
        """Print a line (a log record) above the live bar, never glued to it."""
        with self.lock:
            if self.live and not self._ended:
                self.stream.write(f"\r\x1b[2K{line}\n{self._bar()}")
            else:
                self.stream.write(line + "\n")
            self.stream.flush()

    def finish(self) -> None:
        with self.lock:
            if self.live and not self._ended:
                self.stream.write("\n")
                self.stream.flush()
            self._ended = True


# -- commands ---------------------------------------------------------------------------------


class NoteHandler(logging.Handler):
    """Log records as lines above a live progress bar, formatted as the handlers it stands in
    for would have."""

    def __init__(self, progress: Progress, handlers: list[logging.Handler]) -> None:
        super().__init__(min((h.level for h in handlers), default=logging.NOTSET))
        self.progress = progress
        self.setFormatter(handlers[0].formatter if handlers else None)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.progress.note(self.format(record))
        except Exception:  # a logging failure must not stop the run
            self.handleError(record)
