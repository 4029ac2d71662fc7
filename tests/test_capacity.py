"""Concurrency fits the server it meets: the capacity gate (model/capacity.py) that every chat
request passes, its arithmetic, and the session through a loopback server that holds requests as
llama.cpp does (slots sharing one KV cache, every request it decodes failing with a 500 when
they outgrow it) or as a rate-limited vLLM does (429).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from terrarium_dagster.cli import main
from terrarium_dagster.errors import Interrupted
from terrarium_dagster.model.capacity import GROW_AFTER, Capacity
from terrarium_dagster.model.client import ChatClient, ChatResult, ClientConfig
from terrarium_dagster.model.session import ModelSession
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.models import AgentCallRecord
from tests.support.cli import run_args
from tests.support.slots_server import CACHE_FULL, SlotsServer, run_slots_server

# -- the arithmetic ------------------------------------------------------------------------------


def _admitted_within(capacity: Capacity, weight: int, seconds: float = 0.3) -> bool:
    """Whether a request of `weight` is admitted within `seconds` (then released at once)."""
    given_up = threading.Event()
    admitted = threading.Event()

    def wait() -> None:
        try:
            ticket = capacity.acquire(weight, give_up=given_up)
        except Interrupted:
            return
        admitted.set()
        capacity.release(ticket, answered=False)

    waiter = threading.Thread(target=wait)
    waiter.start()
    got = admitted.wait(seconds)
    given_up.set()
    waiter.join(timeout=5)
    return got


def test_requests_in_flight_never_outgrow_the_slots_or_the_cache() -> None:
    capacity = Capacity(slots=4, cache_tokens=1000)
    first = capacity.acquire(400)
    second = capacity.acquire(400)
    assert capacity.held == 800 and capacity.in_flight == 2
    assert not _admitted_within(capacity, 400), "1,200 tokens do not fit a cache of 1,000"
    assert _admitted_within(capacity, 200), "1,000 do"
    capacity.release(second, answered=True)
    assert _admitted_within(capacity, 400)
    capacity.release(first, answered=True)
    assert capacity.held == 0 and capacity.in_flight == 0

    small = [capacity.acquire(10) for _ in range(4)]
    assert not _admitted_within(capacity, 10), "a fifth request waits for one of four slots"
    capacity.release(small.pop(), answered=True)
    assert _admitted_within(capacity, 10)
    for ticket in small:
        capacity.release(ticket, answered=True)

    alone = capacity.acquire(5000)  # larger than the cache: the window gate let it through
    assert capacity.in_flight == 1, "a request alone is always admitted"
    capacity.release(alone, answered=True)


def test_a_request_waiting_for_room_gives_up_when_the_run_stops() -> None:
    capacity = Capacity(slots=1, cache_tokens=100)
    held = capacity.acquire(10)
    stop = threading.Event()
    stop.set()
    with pytest.raises(Interrupted):
        capacity.acquire(10, give_up=stop)
    capacity.release(held, answered=False)


def test_a_capacity_answer_halves_the_limits_once_per_event_and_they_grow_back() -> None:
    capacity = Capacity(slots=8, cache_tokens=8000)
    tickets = [capacity.acquire(900) for _ in range(8)]  # 7,200 tokens held by eight
    for ticket in tickets:  # llama.cpp fails every request it decodes at once
        capacity.back_off(ticket, "HTTP 500: Context size has been exceeded.", tokens=True)
        capacity.release(ticket, answered=False)
    assert capacity.back_offs == 1, "one event lowers the limits once"
    assert capacity.slot_limit == 4 and capacity.token_limit == 3600
    assert capacity.crowded(tickets[0])

    later = capacity.acquire(100)  # admitted after the back-off: a new event lowers again
    assert not capacity.crowded(later)
    capacity.back_off(later, "HTTP 429", tokens=False)
    capacity.release(later, answered=False)
    assert capacity.slot_limit == 1 and capacity.token_limit == 3600

    for _ in range(GROW_AFTER):
        capacity.release(capacity.acquire(100), answered=True)
    assert capacity.slot_limit == 2, "a run of answers raises the limit a step"
    assert capacity.token_limit == 3600 + 8000 // 8
    for _ in range(GROW_AFTER * 16):
        capacity.release(capacity.acquire(100), answered=True)
    assert (capacity.slot_limit, capacity.token_limit) == (8, 8000), "never above the server's"


def test_a_server_without_published_limits_is_limited_only_by_its_429s() -> None:
    capacity = Capacity()
    tickets = [capacity.acquire(10_000) for _ in range(12)]
    assert capacity.in_flight == 12, "vLLM queues: nothing to respect until it refuses"
    capacity.back_off(tickets[-1], "HTTP 429: Too Many Requests", tokens=False)
    assert capacity.slot_limit == 6 and capacity.token_limit is None
    for ticket in tickets:
        capacity.release(ticket, answered=True)


# -- through the session, against a loopback server ------------------------------------------------

SLOTS, CACHE, MAX_TOKENS = 4, 4096, 128
# about 1,100 prompt tokens: three requests (with room for their answers) fit the cache, four
# prompts do not — sixteen at once outgrow it unless the gate holds them back
FILLER = "The caravan of the Ember Road crossed the salt flats at dusk. " * 72


def _session(server: SlotsServer, store: GlossaryStore, **client: object) -> ModelSession:
    options = {"max_retries": 3, "backoff_initial_s": 0.01, "backoff_max_s": 0.05, **client}
    config = ClientConfig(base_url=server.url, **options)  # type: ignore[arg-type]
    return ModelSession(
        ChatClient(config), store, budget=CACHE, max_tokens=MAX_TOKENS, run_id="capacity"
    )


def _sixteen_at_once(session: ModelSession, *, close: bool = True) -> list[ChatResult]:
    def one(number: int) -> ChatResult:
        messages = [
            {"role": "system", "content": FILLER},
            {"role": "user", "content": f"# Scene {number}\nVaskari met Orlundel at the gate."},
        ]
        return session.call(
            messages, purpose="annotate", tools=None, counter=session.counter.fork()
        )

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(one, range(16)))
    if close:
        session.close()
    return results


def _sixteen_through(
    tmp_path: Path, client: dict[str, object] | None = None, **server: object
) -> tuple[SlotsServer, list[ChatResult], list[AgentCallRecord], Capacity]:
    """Sixteen requests at once through a slots server; what it saw, the answers, the books and
    the client's capacity gate."""
    with (
        run_slots_server(**server) as state,  # type: ignore[arg-type]
        GlossaryStore(tmp_path / "store.db") as store,
    ):
        session = _session(state, store, **(client or {}))
        results = _sixteen_at_once(session)
        capacity = session.client.capacity  # type: ignore[union-attr]
        return state, results, store.runs.agent_calls(), capacity


def test_sixteen_requests_fit_the_slots_and_the_cache_the_probe_found(tmp_path: Path) -> None:
    server, results, calls, capacity = _sixteen_through(tmp_path, slots=SLOTS, cache_tokens=CACHE)
    assert (capacity.slots, capacity.cache_tokens) == (SLOTS, CACHE)
    assert len(results) == 16 and all(result.content for result in results)
    assert server.cache_full == 0, "no request outgrew the cache"
    assert server.most_busy <= SLOTS and server.most_held <= CACHE
    assert server.answered == 16 and len(calls) == 16
    assert capacity.peak_in_flight >= 2, "still several at once"


def test_no_more_requests_than_the_runs_concurrency_are_in_flight_whatever_sends_them(
    tmp_path: Path,
) -> None:
    """At concurrency 16 a run had 18 requests in flight (a block's sixteen drafts and two
    summaries the fold sent ahead beside them): the session's `max_in_flight` holds every
    request past it, sent ahead or not, until one ends; each is answered and on the books."""
    with (
        run_slots_server(slots=32, cache_tokens=10**6) as server,
        GlossaryStore(tmp_path / "store.db") as store,
    ):
        config = ClientConfig(base_url=server.url, max_retries=1)
        session = ModelSession(
            ChatClient(config),
            store,
            budget=CACHE,
            max_tokens=MAX_TOKENS,
            run_id="concurrency",
            max_in_flight=5,
        )
        ahead = [
            {"role": "system", "content": "You summarize threads."},
            {"role": "user", "content": "Summarize the thread of the Ember Road."},
        ]
        assert session.send_ahead(ahead, session.scope, purpose="summary", tools=None)
        results = _sixteen_at_once(session, close=False)
        taken = session.call(ahead, purpose="summary", tools=None)  # the reply sent ahead
        session.close()
        calls = store.runs.agent_calls()
    assert len(results) == 16 and all(result.content for result in results) and taken.content
    assert server.most_busy <= 5, f"{server.most_busy} requests at once"
    assert server.most_busy >= 2 and session.peak_in_flight <= 5
    assert server.answered == 17 and len(calls) == 17, "the one sent ahead too, once"


def test_a_full_cache_is_a_capacity_answer_never_the_end_of_the_calls(tmp_path: Path) -> None:
    # A server that publishes nothing (its slots and cache unknown): sixteen at once outgrow
    # its cache, it fails every request it decodes; the gate sends fewer at once until they fit.
    server, results, calls, capacity = _sixteen_through(
        tmp_path, slots=SLOTS, cache_tokens=CACHE, publish=False
    )
    assert len(results) == 16 and all(result.content for result in results)
    assert server.cache_full > 0, "the cache did overflow before the gate learned"
    assert capacity.back_offs >= 1 and capacity.token_limit is not None
    assert len(server.requests) == len(calls), "every attempt is on the books"
    full = [call for call in calls if call.error and CACHE_FULL in call.error]
    assert len(full) == server.cache_full
    assert all("sent again when there is room" in (call.error or "") for call in full)


def test_429s_send_fewer_at_once(tmp_path: Path) -> None:
    server, results, calls, capacity = _sixteen_through(
        tmp_path, {"max_retries": 6}, slots=16, cache_tokens=10**6, rate_limit=4, publish=False
    )
    assert len(results) == 16
    assert server.rate_limited > 0 and capacity.back_offs >= 1
    assert capacity.slot_limit is not None and capacity.slot_limit <= 8
    assert len(server.requests) == len(calls)


def test_a_run_at_concurrency_16_fits_a_llama_cpp_sized_server(
    sample_db: Path, tmp_path: Path
) -> None:
    # four slots sharing 8,192 tokens, as `llama-server -c 8192` has them
    with run_slots_server(slots=4, cache_tokens=8192, hold_s=0.01) as server:
        code = main(
            [
                *run_args(tmp_path / "store.db", sample_db, agent_url=server.url),
                "--concurrency",
                "16",
                "--max-scenes",
                "24",
            ]
        )
    assert code == 0
    assert server.cache_full == 0
    assert server.most_busy <= 4 and server.most_held <= 8192


def test_two_requests_of_one_weight_admitted_alike_each_give_their_room_back() -> None:
    """Tickets alike in every field are still two: releasing one never releases the other (by
    value, `b`'s release removed `a`; `b`, its peaks grown by later requests, then matched no
    release: a slot held for good, and at a limit of one request every request waited forever,
    a run hung with nothing in flight)."""
    capacity = Capacity()
    a = capacity.acquire(100)
    b = capacity.acquire(100)  # alike now: weight 100, epoch 0, peaks 2 and 200
    capacity.release(b, answered=True)
    later = [capacity.acquire(100), capacity.acquire(100)]  # the one still listed grows
    for ticket in [a, *later]:
        capacity.release(ticket, answered=True)
    assert (capacity.in_flight, capacity.held) == (0, 0)
    capacity.configure(slots=1, cache_tokens=None)
    assert _admitted_within(capacity, 100), "the room is free again"
