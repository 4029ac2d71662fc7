"""What one server can hold at once: the gate every chat request passes before it is sent.

A llama.cpp `llama-server` has a fixed number of slots (`/props` `total_slots`) and, by default
(`-np` auto: four slots, a unified KV cache), one KV cache of `n_ctx` tokens that every slot's
prompt and answer share. Sixteen requests in flight hold more than that cache can: the server
then fails every request it is decoding with `HTTP 500 ... Context size has been exceeded.` A
request holds at most its prompt plus its `max_tokens`, so `Capacity` admits a request only
while

- fewer requests than the slots are in flight, and
- what the requests in flight hold together (each weighed as prompt + max_tokens, as the
  session's window gate measured it) fits the cache — a request alone is always admitted (the
  window gate already made it fit one slot).

llama.cpp does not say whether its cache is unified; one slot's `n_ctx` is taken as the cache:
exact for a unified cache (the default), safe for a split one (where each slot has a cache of its
own of that size).

A capacity answer from the server — llama.cpp's 500 about the context size while other requests
were in flight, or a 429 — is a reason to send fewer at once, never the end of a run: the limits
are halved, once per event (every request in flight fails at once on llama.cpp, and one event
lowers the limits once), and grow back a step after a run of answers. A vLLM server queues
instead of failing; it has no slots to respect, and only its 429s lower the limit.

Thread-safe: one `Capacity` per server (per replica), shared by every request to it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from terrarium_dagster.errors import Interrupted

log = logging.getLogger(__name__)

GROW_AFTER = 8  # answers in a row that raise a lowered limit by one step
TOKEN_STEPS = 8  # a lowered token limit grows back by 1/TOKEN_STEPS of the cache per step
WAIT_TICK_S = 0.25  # how often a waiting request looks at whether it may stop waiting
UNBOUNDED_SLOTS = 64  # a slot limit a 429 set on a server without slots is lifted above this


@dataclass(eq=False)
class Ticket:
    """One admitted request: its weight, the limits' epoch when it was admitted, and the most
    requests (and tokens) in flight beside it while it was held. Compared by identity: two
    requests of one weight admitted alike are two tickets (released by value, one's release took
    the other's place in the list, and the other, its peaks grown since, was never released)."""

    weight: int
    epoch: int
    peak_in_flight: int
    peak_held: int


class Capacity:
    """The slots and cache of one server (see the module doc). Unknown limits (None) admit
    everything: the run's concurrency is then the only bound."""

    def __init__(self, slots: int | None = None, cache_tokens: int | None = None) -> None:
        self._cond = threading.Condition()
        self.slots: int | None = None
        self.cache_tokens: int | None = None
        self.slot_limit: int | None = None  # what may be in flight now (lowered by back-offs)
        self.token_limit: int | None = None
        self.in_flight = 0
        self.held = 0
        self.peak_in_flight = 0
        self.epoch = 0  # bumped by each back-off: an event lowers the limits once
        self.back_offs = 0
        self._answers = 0  # answers since the last back-off or growth step
        self._tickets: list[Ticket] = []
        self.configure(slots, cache_tokens)

    def configure(self, slots: int | None, cache_tokens: int | None) -> None:
        """The server's slots and cache, as the probe found them (None: not published)."""
        with self._cond:
            self.slots = slots if slots and slots > 0 else None
            self.cache_tokens = cache_tokens if cache_tokens and cache_tokens > 0 else None
            self.slot_limit = self.slots
            self.token_limit = self.cache_tokens
            self._cond.notify_all()

    def describe(self) -> str:
        slots = f"{self.slots} slots" if self.slots else "slots not published"
        cache = f"a cache of {self.cache_tokens} tokens" if self.cache_tokens else "cache unknown"
        return f"{slots}, {cache}"

    # -- admission --------------------------------------------------------------------------

    def _fits(self, weight: int) -> bool:
        if self.in_flight == 0:
            return True
        if self.slot_limit is not None and self.in_flight >= self.slot_limit:
            return False
        return self.token_limit is None or self.held + weight <= self.token_limit

    def acquire(self, weight: int, *, give_up: threading.Event | None = None) -> Ticket:
        """Wait until a request of `weight` tokens (prompt + max_tokens) fits, then hold it.
        `give_up` set while waiting raises `Interrupted` (the run is stopping)."""
        weight = max(0, weight)
        with self._cond:
            while not self._fits(weight):
                if give_up is not None and give_up.is_set():
                    raise Interrupted("the run stopped while the request waited for room")
                self._cond.wait(WAIT_TICK_S)
            self.in_flight += 1
            self.held += weight
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            ticket = Ticket(weight, self.epoch, self.in_flight, self.held)
            self._tickets.append(ticket)
            for other in self._tickets:
                other.peak_in_flight = max(other.peak_in_flight, self.in_flight)
                other.peak_held = max(other.peak_held, self.held)
            return ticket

    def release(self, ticket: Ticket, *, answered: bool) -> None:
        """The request's exchange ended; `answered`: the server answered it (a step towards
        raising a lowered limit)."""
        with self._cond:
            if ticket in self._tickets:
                self._tickets.remove(ticket)
                self.in_flight -= 1
                self.held -= ticket.weight
            if answered:
                self._grow()
            self._cond.notify_all()

    # -- capacity answers -------------------------------------------------------------------

    def crowded(self, ticket: Ticket) -> bool:
        """Whether other requests were in flight beside this one (its failure may be theirs)."""
        return ticket.peak_in_flight > 1

    def back_off(self, ticket: Ticket, why: str, *, tokens: bool) -> None:
        """The server said it holds too much: halve what may be in flight (requests, and with
        `tokens` — its cache was full — tokens), once per event (the requests admitted before
        the last back-off find it already done)."""
        with self._cond:
            if ticket.epoch != self.epoch:
                return
            self.epoch += 1
            self.back_offs += 1
            self._answers = 0
            before = (self.slot_limit, self.token_limit)
            slots = max(1, ticket.peak_in_flight // 2)
            self.slot_limit = min(self.slot_limit or slots, slots)
            if tokens:
                if self.cache_tokens is None:  # a cache it never published: smaller than this
                    self.cache_tokens = max(1, ticket.peak_held - 1)
                room = max(1, ticket.peak_held // 2)
                self.token_limit = min(self.token_limit or room, room)
            # said when the limits change; at the floor (one request alone refused again) the
            # same line would only repeat what was said, once per refusal
            log.log(
                logging.WARNING if (self.slot_limit, self.token_limit) != before else logging.DEBUG,
                "the server is full (%s): at most %d requests and %s tokens in flight from now on",
                why,
                self.slot_limit,
                self.token_limit if self.token_limit is not None else "any",
            )

    def _grow(self) -> None:
        lowered_slots = self.slot_limit is not None and self.slot_limit != self.slots
        lowered_tokens = self.token_limit is not None and self.token_limit != self.cache_tokens
        if not (lowered_slots or lowered_tokens):
            return
        self._answers += 1
        if self._answers < GROW_AFTER:
            return
        self._answers = 0
        if lowered_slots and self.slot_limit is not None:
            self.slot_limit = _grown(self.slot_limit, 1, self.slots, unknown_above=UNBOUNDED_SLOTS)
        if lowered_tokens and self.token_limit is not None:
            step = max(1, (self.cache_tokens or self.token_limit) // TOKEN_STEPS)
            self.token_limit = _grown(self.token_limit, step, self.cache_tokens)


def _grown(limit: int, step: int, ceiling: int | None, *, unknown_above: int = 0) -> int | None:
    """A lowered limit one step up: at most the server's own, or no limit again once a limit the
    server never published has grown past `unknown_above` (a 429 that passed)."""
    if ceiling is not None:
        return min(limit + step, ceiling)
    return None if limit + step > unknown_above else limit + step
