"""The writer's heartbeat: how another process, in any container, knows the lease holder lives.

The lease row in the store says *who* holds the store; this side file (`<store>-lease`) says
*that it still lives*. Liveness never looks at pids or host names, which mean nothing across
containers (two containers may share a host name and a pid):

- The holder keeps an exclusive `flock` on the file for as long as it holds the lease. The kernel
  drops it the moment the process dies, however it dies (SIGKILL, OOM, a container stopped), and
  the lock is seen from every container on the host that mounts the store's folder: a free lock
  under a lease row is a dead holder, taken over at once; a held lock is a live one, never taken.
- The holder also rewrites its beat in the file from a thread of its own every `every` seconds,
  whatever its scenes are doing (a scene's transaction may hold SQLite's write lock for as long
  as a model call lasts, so the beat cannot go through the store). Where the filesystem cannot
  tell about locks, a holder whose beat is older than `STALE_BEATS` beats is dead.

The beat holds the holder's run id, its interval and the time of the beat: a process that beats
faster (a test) is judged by its own interval. Everyone who reads the file runs on the host whose
local disk holds the store (`store/filesystem.py`), so they share its clock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from terrarium_dagster.errors import WriterLeaseError

HEARTBEAT_S = 10.0
"""How often a holder beats."""

STALE_BEATS = 4
"""Beats a holder may miss before it is taken for dead (40 s at the default interval)."""

LEASE_SUFFIX = "-lease"
RECORD_BYTES = 512  # a beat is written in place, padded to this size (one write, one page)


class Beat(BaseModel):
    """One heartbeat as written to the side file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    every: float
    at: float  # seconds since the epoch, the holder's clock (the store's host)

    def fresh(self, now: float | None = None) -> bool:
        age = (time.time() if now is None else now) - self.at
        return age < self.every * STALE_BEATS


def heartbeat_path(where: str) -> Path | None:
    return None if where == ":memory:" else Path(f"{where}{LEASE_SUFFIX}")


def read_beat(path: Path | None) -> Beat | None:
    """The last beat written, or None when there is none (or it cannot be read)."""
    if path is None:
        return None
    for _ in range(3):  # a read that met a write in progress is read again
        try:
            return Beat.model_validate_json(path.read_bytes().strip(b"\0 \n"))
        except OSError:
            return None
        except ValidationError:
            time.sleep(0.01)
    return None


def lock_held(path: Path) -> bool | None:
    """Does a process hold the lease's lock on `path`? None when the filesystem cannot tell."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def holder_alive(path: Path | None, run_id: str) -> bool:
    """Does run `run_id` (the lease row's holder) still live? Its lock says so where the
    filesystem keeps locks, its heartbeat where it does not. An in-memory store has one process
    by nature: its holder is alive."""
    if path is None:
        return True
    held = lock_held(path)
    if held is not None:
        return held  # a live process holds the lock (the holder, or one taking over now)
    beat = read_beat(path)
    return beat is not None and beat.run_id == run_id and beat.fresh()


class Heartbeat:
    """The holder's lock and beat: taken and written at `start`, then beaten every `every`
    seconds on a daemon thread until `stop`."""

    def __init__(self, path: Path | None, run_id: str, every: float | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self.every = HEARTBEAT_S if every is None else every
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd: int | None = None
        self.made = False  # this holder made the file (none was there)

    def start(self) -> None:
        """Lock and beat, before the lease commits: nobody sees the row without both."""
        if self.path is None:
            return
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            self.made = True
        except FileExistsError:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self._lock()
        self.beat()
        self._thread = threading.Thread(
            target=self._run, name=f"lease-heartbeat-{self.run_id}", daemon=True
        )
        self._thread.start()

    def _lock(self) -> None:
        assert self._fd is not None
        deadline = time.monotonic() + 5  # a reader's probe holds a shared lock for an instant
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise WriterLeaseError(
                        f"{self.path} is locked by a live writer the lease does not name; "
                        "one writer at a time: wait for it to finish or stop it"
                    ) from None
                time.sleep(0.02)
            except OSError as exc:
                if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    return  # no locks here: the heartbeat alone tells
                raise

    def beat(self) -> None:
        """Write a beat in place (one small write of a fixed size)."""
        if self._fd is None:
            return
        beat = Beat(run_id=self.run_id, every=self.every, at=time.time())
        record = beat.model_dump_json().encode().ljust(RECORD_BYTES)
        os.pwrite(self._fd, record, 0)
        os.ftruncate(self._fd, RECORD_BYTES)

    def _run(self) -> None:
        while not self._stopped.wait(self.every):
            with contextlib.suppress(OSError):  # a full disk now is not a death; the next try
                self.beat()

    def remove_made_file(self) -> None:
        """Remove the file if this holder made it, while it still holds the lock: the folder
        is left as the holder found it (a command refused after taking the lease, a finished
        run). Only the lease's release calls it, inside the transaction that deletes the lease
        row: a taker opens and locks the file only inside its own transaction (SQLite's write
        lock, `RunLog._take_lease`), so none can have opened the file removed here and lock it
        after, while another locks a new one."""
        if self.made and self.path is not None and self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self.made = False

    def stop(self) -> None:
        """Stop beating and let the lock go. The file stays (`remove_made_file` aside): a
        successor opening it meanwhile must lock the same file everyone else reads."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
