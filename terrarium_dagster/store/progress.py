"""Thread progress: where each thread stands (scenes done, status, its snapshot)."""

from __future__ import annotations

from typing import Any

from terrarium_dagster.errors import InputError, StoreError
from terrarium_dagster.store.base import (
    Aggregate,
    RowsAsRead,
    StoreConnection,
    dump_json,
    guarded,
    now_iso,
)
from terrarium_dagster.store.models import (
    THREAD_STATUSES,
    ThreadState,
)
from terrarium_dagster.store.records import (
    UNSET,
    _optional_int,
    _thread_state,
    _Unset,
)

PARSED_STATES = 100_000  # thread states kept as read (rows of every version seen), at most

# thread_state.extra: the last post of the last scene annotated; posts after it are new scenes
THROUGH_POST = "through_post"


def through_post(state: ThreadState | None) -> int | None:
    """The last post annotated in the thread (None: none yet, or a store from before it was
    recorded)."""
    value = state.extra.get(THROUGH_POST) if state is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class ThreadProgress(Aggregate):
    """The store's thread-progress aggregate: `store.progress`."""

    def __init__(self, store: StoreConnection) -> None:
        super().__init__(store)
        # each thread's state as read, by its row's values: the run asks where every thread
        # stands at each thread of a book (hundreds of rows, each a model made again, took
        # most of a no-op run's 12 s on a novel of 239 chapters); a row changed reads anew
        self._parsed = RowsAsRead(_thread_state, most=PARSED_STATES)

    # ---------------------------------------------------------------------------- thread state
    @guarded
    def thread_state(self, thread_id: int) -> ThreadState | None:
        row = self.conn.execute(
            "SELECT * FROM thread_state WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        return None if row is None else _thread_state(row)

    @guarded
    def thread_states(self) -> list[ThreadState]:
        """All recorded thread states in story order (position)."""
        return self.records(self._parsed, "SELECT * FROM thread_state ORDER BY position, thread_id")

    @guarded
    def set_thread_state(
        self,
        thread_id: int,
        *,
        thread_key: str | _Unset = UNSET,
        position: int | _Unset = UNSET,
        status: str | _Unset = UNSET,
        scenes_total: int | _Unset = UNSET,
        scenes_done: int | _Unset = UNSET,
        cursor_scene_id: str | _Unset | None = UNSET,
        run_id: str | _Unset | None = UNSET,
        end_revision_id: int | _Unset | None = UNSET,
        snapshot_id: int | _Unset | None = UNSET,
        extra: dict[str, Any] | _Unset = UNSET,
    ) -> ThreadState:
        """Create or update a thread's state; only the arguments given change (None clears a
        nullable column). A new row needs ``thread_key`` and ``position``. ``extra`` is merged
        key by key into the stored extra."""
        if isinstance(thread_id, bool) or not isinstance(thread_id, int):
            raise InputError(f"thread id must be an integer, not {thread_id!r}")
        if status is not UNSET and status not in THREAD_STATUSES:
            raise InputError(f"thread status {status!r} is not one of {', '.join(THREAD_STATUSES)}")
        for name, value in (
            ("position", position),
            ("scenes_total", scenes_total),
            ("scenes_done", scenes_done),
        ):
            if value is not UNSET and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InputError(f"{name} must be a non-negative integer, not {value!r}")
        if end_revision_id is not UNSET:
            _optional_int(end_revision_id, "end_revision_id")
        if snapshot_id is not UNSET:
            _optional_int(snapshot_id, "snapshot_id")
        if extra is not UNSET and not isinstance(extra, dict):
            raise InputError("thread state extra must be a dict")
        with self.transaction():
            current = self.thread_state(thread_id)
            if current is None:
                if thread_key is UNSET or position is UNSET:
                    raise StoreError(
                        f"thread {thread_id} has no state yet; give thread_key and position"
                    )
                self.conn.execute(
                    "INSERT INTO thread_state (thread_id, thread_key, position, updated_at) "
                    "VALUES (?, ?, ?, ?)",
                    (thread_id, thread_key, position, now_iso()),
                )
                current = self.thread_state(thread_id)
                assert current is not None
            values: dict[str, object] = {
                "thread_key": thread_key,
                "position": position,
                "status": status,
                "scenes_total": scenes_total,
                "scenes_done": scenes_done,
                "cursor_scene_id": cursor_scene_id,
                "run_id": run_id,
                "end_revision_id": end_revision_id,
                "checkpoint_id": snapshot_id,
            }
            changes = {name: value for name, value in values.items() if value is not UNSET}
            if extra is not UNSET:
                changes["extra"] = dump_json({**current.extra, **extra})
            changes["updated_at"] = now_iso()
            assignments = ", ".join(f"{name} = ?" for name in changes)
            self.conn.execute(
                f"UPDATE thread_state SET {assignments} WHERE thread_id = ?",
                (*changes.values(), thread_id),
            )
            state = self.thread_state(thread_id)
            assert state is not None
            return state
