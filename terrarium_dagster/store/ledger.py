"""The call ledger: every request is on the books before it is sent.

A scene is one store transaction, and once it has written it holds SQLite's one write lock
through its later model calls: no connection can commit a call row then. So a request is first
written to the ledger, a file beside the store (``<store>-calls``, one JSON line per event,
appended with ``O_APPEND`` under a lock): a ``sent`` line before the request (each HTTP attempt
of a model call) leaves, a ``done`` line with its row (tokens, latency, outcome) when it ends.
Outside a transaction the ledger is settled into the ``agent_call`` table (each row keyed by its
request, so settling twice inserts nothing twice) and emptied once everything in it is in the
table.

After a SIGKILL the ledger still holds the killed calls: the next writer settles them (a ``sent``
line whose process is gone is a call that got no answer), and readers (`terrarium status`) count
what is in the ledger and not yet in the table, so the books equal what the server saw.

Between the ``sent`` line and the request's first byte there is work (the connection pool, a
connect, other threads holding the interpreter), so a kill can land after the one and before the
other: a request on the books the server never received. A request sent over the network is
therefore ``departs``-marked, and a ``left`` line follows the moment its headers start to go
(the HTTP transport's trace): a dead process's ``departs`` call with no ``left`` line never
reached the server and is no call; one with it is a call that got no answer, as before.

Thread-safe (a lock per ledger) and safe beside another process writing the same ledger (`why`
beside a run: ``flock``). A store in memory keeps its ledger in memory.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

from terrarium_dagster.store.models import AgentCallRecord

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the in-process lock only
    fcntl = None  # type: ignore[assignment]

LEDGER_SUFFIX = "-calls"
NO_ANSWER = "no answer recorded: the process stopped during the call"
#: How the outcome of an attempt the run stopped with in flight begins (its answer not read).
ABANDONED = "abandoned: "
#: The outcome of such an attempt whose answer came after all, while its process lived: it
#: replaces the abandoned row settled at the stop, with its real usage (`RunLog.record_calls`).
ANSWERED_AFTER_STOP = ABANDONED + "answered after the run stopped"


def is_abandoned(outcome: str | None) -> bool:
    """Whether a call's outcome says the run stopped with it in flight, its answer unread:
    abandoned when the run stopped, or left by a process that died during it (`NO_ANSWER`).
    Not a failure of the call: the server was not at fault."""
    return outcome is not None and (outcome.startswith(ABANDONED) or outcome == NO_ANSWER)


def ledger_path(where: str) -> Path | None:
    return None if where == ":memory:" else Path(f"{where}{LEDGER_SUFFIX}")


def _alive(pid: int, host: str) -> bool:
    if host != socket.gethostname():
        return True  # another host's process: not ours to judge
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LedgerView:
    """What the ledger holds: the rows of answered calls, and the calls still open."""

    def __init__(self) -> None:
        self.done: dict[str, list[AgentCallRecord]] = {}
        self.open: dict[str, tuple[AgentCallRecord, bool]] = {}  # key -> (row, process alive)
        self.unsent: set[str] = set()  # a dead process's requests that never left it: no calls

    def rows(self, *, settled_only: bool) -> list[AgentCallRecord]:
        """Every row: the answered calls', and for each open call one row with no answer (only
        those of a dead process when `settled_only`: a live one's call may still return)."""
        rows = [row for rows in self.done.values() for row in rows]
        for key, (row, alive) in self.open.items():
            if key not in self.done and not (settled_only and alive):
                rows.append(row)
        return rows

    def keys(self) -> set[str]:
        """The keys of every call on the books (not those that never left a dead process)."""
        return set(self.done) | set(self.open)


class CallLedger:
    """The ledger of one store (see the module docstring)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory: list[str] = []  # a store in memory: its lines here

    @contextlib.contextmanager
    def _locked(self, *, write: bool) -> Iterator[int | None]:
        with self._lock:
            if self.path is None:
                yield None
                return
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT if write else os.O_RDONLY
            try:
                fd = os.open(self.path, flags, 0o644)
            except FileNotFoundError:
                if write:
                    raise
                yield None
                return
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
                yield fd
            finally:
                os.close(fd)

    def _append(self, event: dict[str, object]) -> None:
        line = json.dumps(event, separators=(",", ":"), sort_keys=True) + "\n"
        with self._locked(write=True) as fd:
            if fd is None:
                self._memory.append(line)
            else:
                os.write(fd, line.encode())

    def sent(self, record: AgentCallRecord, *, departs: bool = False) -> str:
        """A request about to be sent: on the books now. Returns its key. `departs`: a `left`
        line will say when it starts to leave the process (until then a kill means it was never
        sent)."""
        key = uuid.uuid4().hex
        row = record.model_copy(update={"request_key": key, "error": NO_ANSWER})
        event: dict[str, object] = {
            "k": key,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "sent": row.model_dump(exclude={"id"}),
        }
        if departs:
            event["departs"] = True
        self._append(event)
        return key

    def left(self, key: str) -> None:
        """The request `key` (sent with `departs`) starts to leave the process now."""
        self._append({"k": key, "left": True})

    def done(self, key: str, rows: Sequence[AgentCallRecord]) -> list[AgentCallRecord]:
        """The request `key` returned (or failed): its rows, the last one the call's own, each
        keyed (the retried attempts after the call's key). Returns the keyed rows."""
        keyed = [
            row.model_copy(update={"request_key": key if i == len(rows) - 1 else f"{key}.{i}"})
            for i, row in enumerate(rows)
        ]
        self._append({"k": key, "done": [row.model_dump(exclude={"id"}) for row in keyed]})
        return keyed

    def read(self) -> LedgerView:
        with self._locked(write=False) as fd:
            if fd is None:
                text = "".join(self._memory)
            else:
                with open(fd, closefd=False, encoding="utf-8") as handle:
                    text = handle.read()
        return self._parse(text)

    @staticmethod
    def _parse(text: str) -> LedgerView:
        view = LedgerView()
        departing: set[str] = set()  # sent with `departs`: on the books once they left
        left: set[str] = set()
        for line in text.splitlines():
            try:
                event = json.loads(line)
                key = str(event["k"])
                if "done" in event:
                    view.done[key] = [AgentCallRecord(**row) for row in event["done"]]
                elif "left" in event:
                    left.add(key)
                elif "sent" in event:
                    alive = _alive(int(event.get("pid", 0)), str(event.get("host", "")))
                    view.open[key] = (AgentCallRecord(**event["sent"]), alive)
                    if event.get("departs"):
                        departing.add(key)
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a kill: its call was not sent yet
        for key in departing - left - set(view.done):
            if not view.open[key][1]:  # its process is gone and the request never left it
                del view.open[key]
                view.unsent.add(key)
        return view

    def clear(self, committed: set[str]) -> None:
        """Empty the ledger if every call in it is in the table (`committed` keys) and none is
        still open in a live process: what a settle commits is never dropped before."""
        with self._locked(write=True) as fd:
            if fd is None:
                view = self._parse("".join(self._memory))
            else:
                with open(fd, closefd=False, encoding="utf-8") as handle:
                    handle.seek(0)
                    view = self._parse(handle.read())
            if any(alive and key not in view.done for key, (_, alive) in view.open.items()):
                return
            if not view.keys() <= committed:
                return
            if fd is None:
                self._memory.clear()
            else:
                os.ftruncate(fd, 0)
