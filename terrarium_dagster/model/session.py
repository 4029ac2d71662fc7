"""The model session: the one path every request to the model takes.

Scene rounds, compaction summaries, the pre-compaction flush, curation and its retries, summon and
`why` all call `ModelSession.call`. It owns, once:

- **the window**: `min(context_budget, the server's window, a window a 400 taught)`; the server's
  window is what `model/server.py`'s probe found (vLLM's `max_model_len`, llama.cpp's `n_ctx`);
  the learned window is kept in the store's meta so a restart starts from it;
- **the gate**: a request is measured as the server will (messages + tool schemas + the chat
  template, by the token counter; exactly by `/tokenize` once the estimate nears the limit) and
  sent only when `prompt + max_tokens <= window`. A request that does not fit is made smaller by
  the caller's `Shrink` (the scene loop compacts before it calls; curation, summaries and the
  flush fall back to a short standalone prompt; summon trims its past context), never sent blind;
- **overflow recovery**: a 400 overflow (vLLM's, llama.cpp's or llama-cpp-python's wording)
  teaches the window, the request is made smaller and retried once; a second overflow is a
  `BudgetError` (one line, exit 1);
- **the server's capacity**: each request is weighed as its prompt (as the gate counted it) plus
  its `max_tokens`, and each of its attempts waits for room on the server (`model/capacity.py`,
  one per server in the client);
- **token accounting**: every HTTP attempt is on the books before it is sent (a line in the
  store's call ledger, `store/ledger.py`, written through `Books`) and completed when it ends,
  with its prompt, cached and completion tokens (counted locally when the server omits `usage`)
  and its outcome (retried, failed, answered); `close` records the attempts still with the
  server when the run stops as abandoned (an answer that comes after all is booked with its real
  usage instead), and lets no attempt leave after it; the ledger is
  settled into the store's call table outside any transaction (`record_calls`, after a scene's
  commit or rollback), so a rolled-back scene still shows what
  the server was asked and a SIGKILL loses nothing (the next writer settles it; `status` counts
  it meanwhile). Recording is thread-safe (the ledger's lock);
- **the call in flight**: `calling` is set while a request is with the server, so a Ctrl-C
  abandons it at once;
- **replies sent ahead**: a request whose content is known before its turn (the fold's flush and
  summary beside the curation, a compaction's summary beside its flush) is sent on a thread of
  its own (`send_ahead`: gated with a fork of the counter, on the books), and the call that sends
  the same request later takes its reply (`_send`), gated, counted and learned from on its own
  counter as if it had sent it then: nothing written depends on whether a reply came ahead;
- **an answer that decides nothing is not a decision** (`unanswered`, the one rule): a reply cut
  off by max_tokens (`finish_reason: length`), or with no tool call and no text once `<think>`
  blocks are set aside (reasoning only, or empty), is asked again — with more room to answer
  while the window allows, then with a nudge to answer without thinking aloud — and if the model
  still does not answer, `NoAnswerError` stops the run (one line, exit 1; the scene or curation
  rolls back, so the resumed run asks the same question again).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any

from terrarium_dagster.context.compaction import strip_thinking
from terrarium_dagster.context.state import Message
from terrarium_dagster.context.tokens import ServerCounter, TokenCounter, exact_threshold
from terrarium_dagster.errors import AgentError, BudgetError, Interrupted, NoAnswerError
from terrarium_dagster.jsonform import canonical_json
from terrarium_dagster.model.accounting import (
    ABANDONED_AT_STOP,
    RETRIED,
    CallScope,
    attempt_record,
)
from terrarium_dagster.model.client import (
    ChatResult,
    FailedAttempt,
    ServerUnreachableError,
    outcome_of,
)
from terrarium_dagster.model.protocol import Usage
from terrarium_dagster.model.replicas import ModelClient
from terrarium_dagster.model.server import server_info
from terrarium_dagster.model.server_answers import ServerContextOverflow
from terrarium_dagster.store.annotator import GlossaryStore
from terrarium_dagster.store.base import now_iso
from terrarium_dagster.store.ledger import ANSWERED_AFTER_STOP
from terrarium_dagster.store.models import AgentCallRecord

log = logging.getLogger(__name__)

ANNOTATE_PURPOSE = "annotate"  # the request kind whose template switches a count renders
WINDOW_META = "server_window"  # a window learned from a 400, kept so a restart starts from it
EXACT_SHARE = 0.85  # a request whose estimate is within 15% of the limit is counted exactly
CUT_MARKER = "\n[… cut to fit the window …]\n"
MIN_KEEP_CHARS = 200
STANDALONE_ATTEMPTS = 4
MORE_ROOM = 4  # a reply that decided nothing is asked again with up to this times max_tokens
AHEAD_TICK_S = 0.25  # how often a call waiting for a reply sent ahead looks at the stop
ANSWER_NUDGE = (
    "Your last reply decided nothing: it was empty, held only reasoning, or was cut off at the "
    "token limit. Answer now, briefly and without thinking aloud: make the tool calls this task "
    "needs, or give the answer it asks for."
)

# (messages, prompt-token limit) -> a smaller request within the limit, or None if none can be
# made. The session calls it while a request does not fit, and once more after a 400 overflow.
Shrink = Callable[[list[Message], int], list[Message] | None]


Decided = Callable[[ChatResult], bool]
"""The caller's judgement of a cut-off reply: True when what it holds decides something (the
curator's complete decision lines); the caller then asks again about the rest itself."""


def unanswered(result: ChatResult, decided: Decided | None = None) -> str | None:
    """Why `result` decides nothing, or None when it answers: the one rule every caller (scene
    rounds, summaries, the flush, curation, summon) relies on, through `ModelSession.call`.

    Cut off by max_tokens (`finish_reason: length`), even beside tool calls (the calls it meant
    to make next are lost), unless the caller's `decided` finds decisions in it; no tool call and
    no text once `<think>` blocks are set aside (reasoning only: the model thought and never
    answered), or nothing at all."""
    if result.finish_reason == "length":
        if decided is not None and decided(result):
            return None
        return "cut off at max_tokens (finish_reason length)"
    if result.tool_calls:
        return None
    content = result.content or ""
    text = strip_thinking(content).strip()
    if text.startswith(("<think>", "<thinking>")):  # a block never closed: all of it thinking
        text = ""
    if text:
        return None
    if result.reasoning or "<think" in content:
        return "reasoning only, no answer"
    return "empty"


@dataclass(frozen=True)
class Request:
    """What stays the same across the sends of one `ModelSession.call` (asked again with more
    room, nudged): its kind, tools, the caller's way of making it smaller, whether an overflow
    is retried here, when to count exactly, where its records are summed."""

    purpose: str
    tools: Sequence[dict[str, Any]] | None
    tool_choice: str
    shrink: Shrink | None
    retry_overflow: bool
    exact_share: float
    tally: Callable[[AgentCallRecord], None] | None


@dataclass(frozen=True)
class Outgoing:
    """One send of a request, past the gate: the messages as admitted, who it is for, the
    answer's room, its measured prompt, the counter that learns from it, and whether it is
    asked with the thinking switch off (`quiet`)."""

    messages: list[Message]
    scope: CallScope
    request: Request
    max_tokens: int | None
    prompt_tokens: int
    counter: TokenCounter
    quiet: bool = False


def _reply_key(
    messages: Sequence[Message], request: Request, max_tokens: int | None, *, quiet: bool
) -> str:
    """What makes two sends the same request to the server: their messages, kind (its
    sampling options), tools, tool choice, answer size and thinking switch."""
    sent = {
        "messages": list(messages),
        "purpose": request.purpose,
        "tools": list(request.tools) if request.tools else None,
        "tool_choice": request.tool_choice,
        "max_tokens": max_tokens,
        "quiet": quiet,
    }
    return hashlib.sha256(canonical_json(sent).encode()).hexdigest()


class ModelSession:
    """The client, the window gate, token accounting and call recording of one run (or of one
    `why`).

    `call` may run on several threads at once (a block of drafted scenes keeps up to
    `concurrency` requests in flight): the call ledger is thread-safe, and only the thread that
    made the session writes the store (it settles the ledger; a window learned on another thread
    is persisted by it later). Each concurrent caller passes its own `counter` (a fork of the
    run's), so what the counter learns never depends on the order replies arrive in."""

    def __init__(
        self,
        client: ModelClient,
        store: GlossaryStore,
        *,
        budget: int,
        max_tokens: int,
        run_id: str | None,
        counter: TokenCounter | None = None,
        record_at_once: bool = False,
        request_options: Callable[[str], Mapping[str, Any]] | None = None,
        max_in_flight: int | None = None,
    ) -> None:
        if max_tokens <= 0:
            raise BudgetError(f"max_tokens must be positive, not {max_tokens}")
        self.client = client
        self.store = store
        self.budget = budget
        self.max_tokens = max_tokens
        self.run_id = run_id
        # sampling and the thinking switch of each kind of request (model.sampling)
        self.request_options = request_options
        self.counter: TokenCounter = counter or ServerCounter(tokenize=self._count_on_server)
        # `why` beside a run records each call at once; a run buffers them past its transactions
        self.record_at_once = record_at_once
        self.scope = CallScope(run_id)
        self.calling = threading.Event()
        self.learned_window: int | None = None
        self.on_window: list[Callable[[int], None]] = []
        self.on_call: Callable[[str, CallScope], None] | None = None
        self._lock = threading.Lock()
        self.stopped = threading.Event()  # set by `close`: no attempt leaves any more
        self._open_attempts: dict[str, tuple[str, CallScope, str | None]] = {}
        self._abandoned: set[str] = set()  # attempts open when the session closed
        self._owner = threading.get_ident()
        # the run's concurrency: no more requests than this are in flight at once, whatever
        # sends them (a block's drafts, a summary or a flush sent ahead, the curator's batches);
        # a request past it waits, unsent and not yet on the books, for one to end
        self.max_in_flight = max_in_flight if max_in_flight and max_in_flight > 0 else None
        self._flight = threading.Condition(self._lock)
        self.in_flight = 0
        self.peak_in_flight = 0
        self._ahead: dict[str, Future[ChatResult]] = {}  # replies sent ahead (`send_ahead`)
        self._ahead_before: set[str] = set()  # of those, the ones sent before the last drop
        self._window_unsaved = False
        self._model: str | None = None
        self.window = self._initial_window()

    # -- the window -------------------------------------------------------------------------

    def _initial_window(self) -> int:
        window = self.budget
        try:
            served = server_info(self.client).window
        except ServerUnreachableError:
            raise  # nothing to ask the model either: say so now, not after a second round
        except AgentError as exc:  # the budget alone, then; a 400 still teaches the window
            log.warning("cannot read the server's window (%s); using the budget", exc)
            served = None
        if served:
            window = min(window, served)
        learned = self.store.get_meta(WINDOW_META)
        if learned and learned.isdigit():
            window = min(window, int(learned))
        if window <= self.max_tokens:
            raise BudgetError(
                f"the model's window of {window} tokens leaves no room for a prompt beside "
                f"max_tokens {self.max_tokens}: lower max_tokens"
            )
        return window

    def limit(self, max_tokens: int | None = None) -> int:
        """Prompt tokens a request answered in `max_tokens` (default: the session's) may have."""
        return self.window - (max_tokens or self.max_tokens)

    def learn_window(self, exc: ServerContextOverflow) -> None:
        """A 400 overflow names the server's real window: respect it from now on."""
        window = exc.max_context_length
        if not window or window >= self.window or window <= self.max_tokens:
            return
        log.warning("the server's window is %d tokens, not %d: respecting it", window, self.window)
        self.window = window
        self.learned_window = window
        self._window_unsaved = True
        if self._on_owner_thread():
            self.persist_learned_window()  # else the owner persists it (record_calls, close)
        for listener in self.on_window:
            listener(window)

    def _on_owner_thread(self) -> bool:
        return threading.get_ident() == self._owner

    def persist_learned_window(self) -> None:
        """Keep a learned window in the store (inside a transaction it commits with it; the engine
        calls this again after a rollback, so a restart starts from it either way)."""
        if self.learned_window is not None and not self.store.read_only:
            self.store.set_meta(WINDOW_META, str(self.learned_window))
            self._window_unsaved = False

    # -- measuring --------------------------------------------------------------------------

    def _count_on_server(
        self, messages: list[Message], tools: list[dict[str, Any]] | None
    ) -> int | None:
        """The server's count of a prompt, rendered with the thinking switch OFF when requests
        carry one: the count is shared by every kind of request, and off is Qwen3's longer
        rendering (an empty think block after the generation prompt), so a request sent with
        either switch is never counted short."""
        options = self.request_options(ANNOTATE_PURPOSE) if self.request_options else None
        switches = (options or {}).get("chat_template_kwargs")
        if not switches:
            return self.client.tokenize(messages, tools)
        counting = {**switches, "enable_thinking": False}
        return self.client.tokenize(messages, tools, template_kwargs=counting)

    @property
    def model(self) -> str | None:
        if self._model is None:
            try:
                self._model = self.client.model_name()
            except AgentError:
                return None
        return self._model

    def count(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        *,
        exact_above: int | None = None,
        counter: TokenCounter | None = None,
    ) -> int:
        """Prompt tokens of a request: the counter's estimate (which errs high as a rule), or
        the server's exact count when the estimate is above `exact_above` and the server can
        count."""
        counter = counter or self.counter
        tool_list = list(tools) if tools else None
        estimate = counter.count_messages(list(messages), tool_list)
        if exact_above is not None and estimate > exact_above:
            exact = counter.count_exact(list(messages), tool_list)
            if exact is not None:
                return exact
        return estimate

    def admit(
        self,
        messages: list[Message],
        *,
        tools: Sequence[dict[str, Any]] | None,
        purpose: str,
        max_tokens: int | None = None,
        shrink: Shrink | None = None,
        exact_share: float = EXACT_SHARE,
        counter: TokenCounter | None = None,
    ) -> tuple[list[Message], int]:
        """The gate: `messages` if prompt + max_tokens fits the window, else the smaller request
        `shrink` makes (asked until it fits or gives up), else BudgetError. Never a blind send.
        With the prompt tokens of what it admits (what the request will hold on the server
        beside its answer: the capacity gate's weight)."""
        answer = max_tokens or self.max_tokens
        limit = self.limit(answer)
        near = exact_threshold(limit, exact_share)  # counted exactly above it
        tokens = self.count(messages, tools, exact_above=near, counter=counter)
        while tokens > limit:
            smaller = shrink(messages, limit) if shrink is not None else None
            if smaller is None or smaller == messages:
                raise BudgetError(
                    f"a {purpose} request of {tokens} prompt tokens plus {answer} for the answer "
                    f"does not fit the model's window of {self.window} tokens, even made smaller"
                )
            # the gate at work, routine in a small window (every curation and summary there):
            # shown with --verbose, not on every run's terminal
            log.debug("%s request made smaller: %d tokens would not fit", purpose, tokens)
            messages = smaller
            tokens = self.count(messages, tools, exact_above=near, counter=counter)
        return messages, tokens

    # -- sending ----------------------------------------------------------------------------

    def call(
        self,
        messages: list[Message],
        scope: CallScope | None = None,
        *,
        purpose: str,
        tools: Sequence[dict[str, Any]] | None,
        tool_choice: str = "auto",
        max_tokens: int | None = None,
        shrink: Shrink | None = None,
        retry_overflow: bool = True,
        exact_share: float = EXACT_SHARE,
        tally: Callable[[AgentCallRecord], None] | None = None,
        counter: TokenCounter | None = None,
        decided: Decided | None = None,
    ) -> ChatResult:
        """Gate, send, record (each record also to `tally`, which sums a summon's cost), and
        make sure the reply answers (`unanswered`, with the caller's `decided`).

        A 400 overflow teaches the window; with `retry_overflow` the request is made smaller and
        sent once more (a second overflow is a BudgetError), without it the overflow is raised
        for the caller to recover (the scene loop compacts the scene). A reply that decides
        nothing is asked again: with up to `MORE_ROOM` times the answer's tokens while the
        window has room for them, then with `ANSWER_NUDGE` appended; still nothing is a
        `NoAnswerError`. The caller gets the answer (the nudge is not part of its messages).
        `counter` (a drafted scene's fork) measures and learns instead of the session's own."""
        counter = counter or self.counter
        answer = max_tokens or self.max_tokens
        scope = scope or self.scope
        request = Request(purpose, tools, tool_choice, shrink, retry_overflow, exact_share, tally)
        result, sent = self._call_once(messages, answer, scope, request, counter)
        reason = unanswered(result, decided)
        if reason is None:
            return result
        reasons = [reason]
        room = self.window - self.count(sent, tools, exact_above=0, counter=counter)
        bigger = min(answer * MORE_ROOM, room)
        if bigger >= answer * 3 // 2:  # the window leaves room to answer at more length
            log.warning(
                "the %s reply decided nothing (%s): asking again with max_tokens %d",
                purpose,
                reason,
                bigger,
            )
            result, _ = self._call_once(sent, bigger, scope, request, counter)
            reason = unanswered(result, decided)
            if reason is None:
                return result
            reasons.append(reason)
        else:
            bigger = answer
        log.warning(
            "the %s reply decided nothing (%s): asking again to answer without thinking aloud",
            purpose,
            reason,
        )
        nudged = [*sent, {"role": "user", "content": ANSWER_NUDGE}]
        nudge_room = self.window - self.count(nudged, tools, exact_above=0, counter=counter)
        room = max(answer, min(bigger, nudge_room))
        result, _ = self._call_once(nudged, room, scope, request, counter, quiet=True)
        reason = unanswered(result, decided)
        if reason is None:
            return result
        reasons.append(reason)
        raise NoAnswerError(
            f"the model did not answer the {purpose} request in {len(reasons)} tries "
            f"({'; '.join(reasons)}), even with room to answer and asked to answer without "
            "thinking aloud; nothing of it was taken as a decision, and a resumed run asks "
            "again (a reasoning model needs vLLM's --reasoning-parser, or --enable-thinking "
            "false)"
        )

    def _call_once(
        self,
        messages: list[Message],
        answer: int,
        scope: CallScope,
        request: Request,
        counter: TokenCounter,
        *,
        quiet: bool = False,
    ) -> tuple[ChatResult, list[Message]]:
        """One request through the gate (and its one retry after a 400), answered in `answer`
        tokens: the reply and the messages it answered. `quiet`: with the thinking switch off
        (where the model has one)."""
        purpose, tools, shrink = request.purpose, request.tools, request.shrink
        gate = {"tools": tools, "purpose": purpose, "max_tokens": answer, "shrink": shrink}
        messages, tokens = self.admit(
            messages, exact_share=request.exact_share, counter=counter, **gate
        )
        try:
            result = self._send(Outgoing(messages, scope, request, answer, tokens, counter, quiet))
        except ServerContextOverflow as exc:
            self.learn_window(exc)
            if not request.retry_overflow:
                raise
            if exc.prompt_tokens:  # the server's own count of what was sent
                counter.observe(messages, list(tools) if tools else None, exc.prompt_tokens)
            retry, tokens = self.admit(
                messages, exact_share=request.exact_share, counter=counter, **gate
            )
            if retry == messages and shrink is not None:  # the gate saw no reason: smaller anyway
                retry = shrink(messages, self.limit(answer) - 64) or messages
                tokens = self.count(retry, tools, counter=counter)
            if retry == messages:
                raise BudgetError(
                    f"the server refused a {purpose} request as too long ({exc.server_message}) "
                    "and it cannot be made smaller"
                ) from exc
            try:
                result = self._send(Outgoing(retry, scope, request, answer, tokens, counter, quiet))
            except ServerContextOverflow as again:
                self.learn_window(again)
                raise BudgetError(
                    f"the server refused a {purpose} request as too long twice: "
                    f"{again.server_message}"
                ) from again
            messages = retry
        if self.on_call is not None:
            self.on_call(purpose, scope)
        return result, messages

    def _send(self, out: Outgoing) -> ChatResult:
        """Send one request, or take its reply sent ahead (`send_ahead`), learned from as if
        it came now (`_exchange`)."""
        request = out.request
        ahead = None
        if self._ahead:  # the key hashes every message: only worth it when a reply waits
            key = _reply_key(out.messages, request, out.max_tokens, quiet=out.quiet)
            ahead = self._reply_ahead(key)
        if ahead is None:
            return self._exchange(out)
        if ahead.usage is not None and ahead.prompt_tokens:  # the server counted it
            tools = list(request.tools) if request.tools else None
            out.counter.observe(out.messages, tools, ahead.prompt_tokens)
        return ahead

    def _exchange(self, out: Outgoing) -> ChatResult:
        """The HTTP exchange of one request: each of its attempts on the books before it
        leaves (`Books`), each waiting for room on the server (weighed as its prompt plus
        `max_tokens`)."""
        messages, scope, request, counter = out.messages, out.scope, out.request, out.counter
        max_tokens, prompt_tokens, quiet = out.max_tokens, out.prompt_tokens, out.quiet
        purpose, tools, tool_choice = request.purpose, request.tools, request.tool_choice
        books = Books(self, purpose, scope, request.tally)
        tool_list = list(tools) if tools else None
        options = self.request_options(purpose) if self.request_options else None
        if quiet and options and "chat_template_kwargs" in options:  # asked to answer at once
            switch = {**options["chat_template_kwargs"], "enable_thinking": False}
            options = {**options, "chat_template_kwargs": switch}
        self._enter_flight()
        try:
            result = self.client.chat(
                messages,
                tools=tool_list,
                tool_choice=tool_choice,
                max_tokens=max_tokens,
                options=options,
                weight=prompt_tokens + (max_tokens or self.max_tokens),
                book=books,
                scope=scope,
            )
        except BaseException as exc:  # an attempt the client left open ends with the call
            ended = FailedAttempt(outcome=outcome_of(exc), server=getattr(exc, "server", None))
            books.fail(ended, retried=False)
            raise
        finally:
            self._leave_flight()
        if result.usage is None:  # the server did not count: count locally, never learn from it
            prompt = self.count(messages, tool_list, counter=counter)
            completion = counter.estimate_text(
                (result.content or "") + "".join(c.function.arguments for c in result.tool_calls)
            )
            usage = Usage(
                prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion
            )
            books.answer(result.model_copy(update={"usage": usage}))
            return result
        books.answer(result)
        if result.prompt_tokens:
            counter.observe(messages, tool_list, result.prompt_tokens)
        return result

    # -- replies sent ahead -------------------------------------------------------------------

    def send_ahead(
        self,
        messages: list[Message],
        scope: CallScope,
        *,
        purpose: str,
        tools: Sequence[dict[str, Any]] | None,
        tool_choice: str = "auto",
        shrink: Shrink | None = None,
        exact_share: float = EXACT_SHARE,
    ) -> bool:
        """Send now, on a thread of its own, a request whose content is known before its turn
        (the fold's summary of a finished thread, while the curation runs): the later `call`
        that sends the same request (the same messages after the gate, kind, tools, tool
        choice and answer size) takes its reply instead of sending it. The request passes the
        gate (with a fork of the counter) and is on the books for `scope` like any other; the
        later call gates, counts and learns exactly as if it sent it then, so nothing a run
        writes depends on whether, or when, a reply came ahead. A reply no call takes is
        dropped by `drop_ahead`. Owner thread; False when the request does not fit the window
        as it is (nothing is sent: the later call decides)."""
        counter = self.counter.fork()
        request = Request(purpose, tools, tool_choice, shrink, True, exact_share, None)
        admitted = self._admit_ahead(messages, request, counter)
        if admitted is None:
            return False
        key, sent, tokens = admitted
        reply: Future[ChatResult] = Future()
        with self._lock:
            if key in self._ahead:
                return True
            self._ahead[key] = reply

        def send() -> None:
            try:
                out = Outgoing(sent, scope, request, self.max_tokens, tokens, counter)
                reply.set_result(self._exchange(out))
            except BaseException as exc:  # the later call sends it itself
                reply.set_exception(exc)

        threading.Thread(target=send, name=f"ahead-{purpose}", daemon=True).start()
        return True

    def replied_ahead(
        self,
        messages: list[Message],
        *,
        purpose: str,
        tools: Sequence[dict[str, Any]] | None,
        tool_choice: str = "auto",
        shrink: Shrink | None = None,
        exact_share: float = EXACT_SHARE,
    ) -> ChatResult | None:
        """The reply to the request `send_ahead` sent for these arguments, when it is back and
        did not fail; None otherwise (never waits, and leaves the reply for the call that takes
        it). Owner thread."""
        request = Request(purpose, tools, tool_choice, shrink, True, exact_share, None)
        admitted = self._admit_ahead(messages, request, self.counter.fork())
        if admitted is None:
            return None
        key = admitted[0]
        with self._lock:
            reply = self._ahead.get(key)
        if reply is None or not reply.done() or reply.exception() is not None:
            return None
        return reply.result()

    def _admit_ahead(
        self, messages: list[Message], request: Request, counter: TokenCounter
    ) -> tuple[str, list[Message], int] | None:
        """A request asked ahead through the gate (`counter`: a fork): its reply key, the
        messages admitted and their prompt tokens; None when it does not fit the window."""
        try:
            sent, tokens = self.admit(
                messages,
                tools=request.tools,
                purpose=request.purpose,
                max_tokens=self.max_tokens,
                shrink=request.shrink,
                exact_share=request.exact_share,
                counter=counter,
            )
        except BudgetError:
            return None
        return _reply_key(sent, request, self.max_tokens, quiet=False), sent, tokens

    def drop_ahead(self) -> None:
        """Forget the replies sent ahead that no call took since the last `drop_ahead` (they
        stay on the books); those sent since are kept until the next: a fold's summary asked
        for beside a thread's first block is taken after the next thread boundary when the
        thread has only one block."""
        with self._lock:
            for key in self._ahead_before:
                self._ahead.pop(key, None)
            self._ahead_before = set(self._ahead)

    def _reply_ahead(self, key: str) -> ChatResult | None:
        """The reply sent ahead for the request `key`, once it is back; None when there is none
        or it failed (the caller then sends the request itself, as it would have)."""
        with self._lock:
            reply = self._ahead.pop(key, None)
        if reply is None:
            return None
        while True:  # a stop signal raised while waiting goes up; the reply's failure does not
            if self.stopped.is_set():
                raise Interrupted("the run stopped: no request is sent any more")
            try:
                failure = reply.exception(timeout=AHEAD_TICK_S)
            except TimeoutError:
                continue
            return None if failure is not None else reply.result()

    def _enter_flight(self) -> None:
        """A request leaves: it waits while `max_in_flight` requests are in flight (a stop
        raised meanwhile goes up: nothing is sent once the run stopped)."""
        with self._flight:
            while self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
                if self.stopped.is_set():
                    raise Interrupted("the run stopped: no request is sent any more")
                self._flight.wait(AHEAD_TICK_S)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            self.calling.set()

    def _leave_flight(self) -> None:
        with self._flight:
            self.in_flight -= 1
            if self.in_flight == 0:
                self.calling.clear()
            self._flight.notify()

    # -- recording --------------------------------------------------------------------------

    def _open(
        self, purpose: str, scope: CallScope | None, server: str | None, *, departs: bool = False
    ) -> str:
        """Before an attempt leaves: a ledger line (no answer yet), whatever transaction is
        open; `Interrupted` once the session is closed (no request leaves a stopped run).
        `departs`: a `left` line will follow when it starts to leave (`CallLedger.sent`)."""
        where = scope or self.scope
        with self._lock:
            if self.stopped.is_set():
                raise Interrupted("the run stopped: no request is sent any more")
            key = self.store.runs.ledger.sent(
                AgentCallRecord(
                    run_id=where.run_id,
                    thread_id=where.thread_id,
                    scene_id=where.scene_id,
                    purpose=purpose,
                    model=self.model,
                    server=server,
                    created_at=now_iso(),
                ),
                departs=departs,
            )
            self._open_attempts[key] = (purpose, where, server)
        return key

    def _close(
        self,
        key: str,
        row: AgentCallRecord,
        tally: Callable[[AgentCallRecord], None] | None,
    ) -> None:
        """An attempt ended: its row on the books (once: an attempt the session abandoned at
        close is not completed again by the thread that sent it)."""
        with self._lock:
            if self._open_attempts.pop(key, None) is None:
                if key not in self._abandoned:
                    return
                # it ended after the run stopped, booked as abandoned then: an answer replaces
                # that row with its real usage (`RunLog.settle_ledger`), no tally
                self._abandoned.discard(key)
                if row.error is not None:
                    return
                row, tally = row.model_copy(update={"error": ANSWERED_AFTER_STOP}), None
            stamped = row.model_copy(update={"created_at": now_iso()})
            rows = self.store.runs.ledger.done(key, [stamped])
        if tally is not None:
            for done in rows:
                tally(done)
        if not self._on_owner_thread():
            return  # the owner writes them (it may hold the store's transaction right now)
        if self.record_at_once or not self.store.in_transaction:
            self.record_calls()

    def close(self) -> None:
        """The run stops: no attempt leaves from now on, and every attempt still open (a
        sibling's request in flight, a hung one) is on the books as abandoned, settled into the
        store's call table now, so the table counts every request the server got when the
        process ends. An answer that comes after all, while the process lives, replaces that
        row with its real usage, as answered after the run stopped (`_close`; the run does not
        wait for it). Owner thread."""
        with self._lock:
            self.stopped.set()
            for key, (purpose, where, server) in self._open_attempts.items():
                row = attempt_record(
                    None,
                    purpose=purpose,
                    model=self.model,
                    scope=where,
                    outcome=ABANDONED_AT_STOP,
                    server=server,
                )
                self.store.runs.ledger.done(key, [row.model_copy(update={"created_at": now_iso()})])
                self._abandoned.add(key)
            self._open_attempts.clear()
        self.record_calls()

    def record_calls(self) -> None:
        """Settle the ledger into the store's call table, in a short transaction of its own
        (outside a scene's: inside one, the calls stay in the ledger until it ends). The owner
        thread only: another thread's calls stay in the ledger until the owner settles it."""
        if not self._on_owner_thread():
            return
        self.store.runs.settle_ledger()
        if self._window_unsaved and not self.store.in_transaction:
            self.persist_learned_window()

    def scoped(self, thread_id: int | None, scene_id: str | None = None) -> CallScope:
        """A scope of this session's run for a thread (and scene)."""
        return replace(self.scope, thread_id=thread_id, scene_id=scene_id)


class Books:
    """The books of one request (the client's `AttemptBook`): each HTTP attempt is a ledger line
    before it leaves and a row when it ends — retried, failed, answered, or abandoned when the
    run stops with it in flight."""

    def __init__(
        self,
        session: ModelSession,
        purpose: str,
        scope: CallScope | None,
        tally: Callable[[AgentCallRecord], None] | None,
    ) -> None:
        self.stopped = session.stopped
        self._session = session
        self._purpose = purpose
        self._scope = scope or session.scope
        self._tally = tally
        self._key: str | None = None  # the attempt open now
        self._server: str | None = None

    def begin(self, server: str, *, departs: bool = False) -> None:
        self._server = server
        self._key = self._session._open(self._purpose, self._scope, server, departs=departs)

    def left(self) -> None:
        if self._key is not None:
            self._session.store.runs.ledger.left(self._key)

    def fail(self, attempt: FailedAttempt, *, retried: bool) -> None:
        if self._key is None:
            return
        self._end(
            attempt.usage,
            outcome=RETRIED + attempt.outcome if retried else attempt.outcome,
            latency_ms=attempt.latency_ms,
            server=attempt.server or self._server,
        )

    def answer(self, result: ChatResult) -> None:
        """The open attempt answered: its tokens, latency and finish reason."""
        if self._key is None:
            return
        self._end(
            result.usage,
            outcome=None,
            latency_ms=result.latency_ms,
            server=result.server or self._server,
            model=result.model or None,
            finish_reason=result.finish_reason,
        )

    def _end(
        self,
        usage: Usage | None,
        *,
        outcome: str | None,
        latency_ms: float,
        server: str | None,
        model: str | None = None,
        finish_reason: str | None = None,
    ) -> None:
        key, self._key = self._key, None
        assert key is not None
        row = attempt_record(
            usage,
            purpose=self._purpose,
            model=model or self._session.model,
            scope=self._scope,
            outcome=outcome,
            server=server,
            latency_ms=latency_ms,
            finish_reason=finish_reason,
        )
        self._session._close(key, row, self._tally)


def standalone_task(session: ModelSession, tools: Sequence[dict[str, Any]] | None) -> Shrink:
    """The last resort for a request beside the scene loop (curation, a summary, the flush):
    its task alone after the system prompt, its longest text cut in the middle if need be."""

    def shrink(messages: list[Message], limit: int) -> list[Message] | None:
        system = [m for m in messages[:1] if m.get("role") == "system"]
        last_user = max(
            (i for i, m in enumerate(messages) if m.get("role") == "user"), default=None
        )
        if last_user is None:
            return None
        task = [dict(m) for m in messages[last_user:]]
        for _attempt in range(STANDALONE_ATTEMPTS):
            candidate = [*system, *task]
            tokens = session.count(candidate, tools, exact_above=int(limit * EXACT_SHARE))
            if tokens <= limit:
                return candidate
            longest = max(range(len(task)), key=lambda i: len(str(task[i].get("content") or "")))
            text = str(task[longest].get("content") or "")
            # the text gives up the whole excess: what stays of it is its own tokens less that
            # (a system prompt of rules, which no cut shortens, is not the text's to make up)
            own = max(1, session.count([task[longest]], None))
            keep = int(len(text) * max(0, own - (tokens - limit)) / own * 0.9)
            if keep < MIN_KEEP_CHARS:
                return None
            head, tail = text[: keep * 2 // 3], text[len(text) - keep // 3 :]
            task[longest] = {**task[longest], "content": f"{head}{CUT_MARKER}{tail}"}
        return None

    return shrink
