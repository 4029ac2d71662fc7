"""The `# Task: curate` message the curator sends, and the parser of the model's answer.

Message layout (the offline backend and tests rely on it; keep it stable)::

    # Task: curate
    thread <thread_id> "<title>" · <n> tentative entries to review

    ## Entry E<id>: <term>
    - [E<id>] <term> (aliases: a; b) [tentative]: <definition, one line>
    first seen: >><post> (thread <thread>) · new in this thread | tentative since thread <t>
        (a rejected entry named again: `· rejected earlier; named again in this thread in <n>
        post(s) (>><post> ...): CONFIRM to restore it, ...`, its evidence those posts; one left
        tentative that no thread changed for some threads: `...; left tentative and not named
        again in the threads since: <n>`)
    sources: >><post> "<quote>"; >><post>; ...
    ### Evidence
    >><post> (QM, first appearance): <text, trimmed>
    >><post> (reader): <text, trimmed>
    ### Similar entries
    - similar: [E<id>] <term> (aliases: ...) [<status>]: <definition>      (or "(none)")

    ## Answer
    <a line: one line per entry, in the answer format>

What each decision means and the answer format (one line per decision: `E12 CONFIRM`,
`E7 MERGE E3 reason`, ...) are the system prompt's (`CURATOR_SYSTEM_PROMPT`), the same for
every review.

Each reviewed entry has exactly one line matching ``^- \\[E(\\d+)\\] ``; similar entries are
written ``- similar: [E..]`` so they never look like entries under review. Evidence is the
post where the term first appears and up to three posts on each side, cut to a character budget
(evidence is cut first when the message would exceed its token budget).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from terrarium_dagster.context.prompts import ENTRY_RULES
from terrarium_dagster.curation.decisions import DECISION_KINDS, CurateDecision
from terrarium_dagster.errors import AgentError
from terrarium_dagster.store.models import Entry, Provenance

TASK_LINE = "# Task: curate"
CHARS_PER_TOKEN = 4
DEFINITION_CHARS = 300
SIMILAR_DEFINITION_CHARS = 100
QUOTE_CHARS = 120
MAX_SOURCES_SHOWN = 6
DEFAULT_EVIDENCE_CHARS = 360
MIN_EVIDENCE_CHARS = 300
REPEATED_FIRST_CHARS = 280
PLANNED_EVIDENCE_CHARS = DEFAULT_EVIDENCE_CHARS // 2
EVIDENCE_STEP = 50

TokenCounter = Callable[[str], int]

#: How the block of a rejected entry named again opens its age line (the offline curator reads it).
NAMED_AGAIN = "rejected earlier; named again in this thread in"
#: How the age line of an entry left tentative and unchanged since goes on (the offline curator
#: reads the count after it).
NOT_NAMED_SINCE = "left tentative and not named again in the threads since:"
#: How the age line of an entry under review at a book's last chapter ends: no later thread can
#: name it again (the offline curator lets a name met once go then, as after quiet threads).
STORY_ENDS = "the story ends with this thread"

#: How an evidence line labels a post of the story itself: a quest master's post ("QM"), or a
#: paragraph of an imported book ("text": a novel has no quest master and no readers).
QM_LABEL = "QM"
BOOK_LABEL = "text"

INSTRUCTIONS = (
    "Review each tentative glossary entry of the message against its evidence (the posts "
    "around its first appearance, cited as >>post) and the similar entries, by these rules:\n\n"
    f"{ENTRY_RULES}\n"
    "Decide for each entry:\n"
    "- CONFIRM: it earns an entry by the test above, under its fullest name, and the definition "
    "is supported by the evidence.\n"
    "- REJECT: it does not earn an entry (a real-world name in its usual sense, an ordinary or "
    "sentence-start word, forum mechanics, a misreading). A character or thing seen in one "
    "scene only still earns one. A rejected entry is kept, hidden.\n"
    "- MERGE: the same thing as another entry (give its id): its names become aliases there "
    "and its sources move there. Merge into the entry with the fullest name.\n"
    "- REVISE: it earns an entry but the definition is wrong, incomplete or not written as the "
    "rules say; give the whole new definition. A revised entry is confirmed.\n"
    "Leave an entry out of your answer to keep it tentative."
)

ANSWER_FORMAT = (
    "## Answer format\n"
    "One line per entry and nothing else: no tool calls, no JSON, no Markdown. "
    "E<n> and E<m> stand for the ids of the message's entries:\n"
    "E<n> CONFIRM\n"
    "E<n> REJECT <short reason>\n"
    "E<n> MERGE E<m> <short reason>\n"
    "E<n> REVISE <the whole new definition>\n"
    "To keep every entry tentative, answer NONE."
)

#: The curator's system prompt: its requests carry no tools and no conversation. The rules, the
#: decisions and the answer format are the same for every review, so they are here, the prefix a
#: server caches once for every review message (each message holds one thread's entries and
#: their evidence).
CURATOR_SYSTEM_PROMPT = (
    "You review the glossary of a long serialized story, built by an annotator reading it in "
    "order. Judge each entry of the message by the rules below and its evidence, using only the "
    "posts shown, and answer in the line format below, never with tool calls.\n\n"
    f"{INSTRUCTIONS}\n\n{ANSWER_FORMAT}"
)

#: How a review message ends: what the answer is, in a line (the format is the system prompt's).
ANSWER_LINE = (
    "## Answer\n"
    "One line per entry, in the answer format: E<n> CONFIRM, REJECT, MERGE E<m> or REVISE; "
    "NONE keeps them all tentative."
)

#: About the tokens the rules and the answer format took in a review message before they were
#: the system prompt's (less the answer line the message ends with now): what a review message
#: gives up of its room, so that a request holds as much as it did and the same entries go to
#: each message with the same evidence (`engine/sequence.py`, `CURATE_PROMPT_TOKENS`).
RULES_TOKENS = -(
    -(len("\n" + INSTRUCTIONS) + len("\n\n" + ANSWER_FORMAT) - len("\n\n" + ANSWER_LINE))
    // CHARS_PER_TOKEN
)

#: Completion tokens a decision line costs, about (a REVISE line more, a CONFIRM far less).
TOKENS_PER_DECISION = 40


@dataclass(frozen=True, slots=True)
class EvidencePost:
    """A post shown as evidence; ``first`` marks the post where the term first appears."""

    post_id: int
    thread_id: int
    label: str
    text: str
    first: bool = False


@dataclass(frozen=True, slots=True)
class CurationItem:
    """One tentative entry under review with everything the curator is shown about it."""

    entry: Entry
    provenance: Sequence[Provenance] = ()
    evidence: Sequence[EvidencePost] = ()
    similar: Sequence[Entry] = ()
    new_in_thread: bool = True
    #: for a rejected entry under review again: the posts of this thread that name it
    named_again: Sequence[int] = ()
    #: for an entry left tentative and unchanged since: the threads since a thread last named it
    quiet_threads: int = 0
    #: under review at a book's last thread: none after it can name the entry again
    story_ends: bool = False


@dataclass(frozen=True, slots=True)
class ThreadHeading:
    thread_id: int
    title: str


def approx_tokens(text: str) -> int:
    """The heuristic token count used when no counter is given (about 4 characters a token)."""
    return len(text) // CHARS_PER_TOKEN + 1


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(limit - 1, 0)].rstrip() + "…"


def entry_line(entry: Entry, *, definition_chars: int = DEFINITION_CHARS) -> str:
    """``[E12] Term (aliases: a; b) [status]: definition`` (without the leading marker)."""
    aliases = f" (aliases: {'; '.join(entry.aliases)})" if entry.aliases else ""
    definition = _one_line(entry.definition, definition_chars) or "(no definition)"
    return f"[E{entry.id}] {entry.term}{aliases} [{entry.status}]: {definition}"


def _window(text: str, names: Sequence[str], chars: int) -> str:
    """At most ``chars`` characters of ``text``, centred on the first occurrence of a name."""
    flat = " ".join(text.split())
    if len(flat) <= chars:
        return flat
    if chars <= 1:
        return ""
    lowered = flat.casefold()
    hits = [lowered.find(name.casefold()) for name in names if name.strip()]
    found = [hit for hit in hits if hit >= 0]
    centre = min(found) if found else 0
    start = max(0, min(centre - chars // 3, len(flat) - chars))
    end = start + chars
    snippet = flat[start:end].strip()
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    return f"{prefix}{snippet}{suffix}"


def _evidence_lines(item: CurationItem, chars: int, shown: set[int]) -> list[str]:
    """The evidence posts within ``chars`` characters: the first appearance gets half (or all),
    its neighbours share the rest, nearest first. Posts that get nothing are left out; neighbours
    already shown for an earlier entry of the message are only named (``>>id`` above), and a
    first-appearance post already shown is cut to the lines around the term, so a scene that
    introduced several terms is not sent several times. Adds what it shows to ``shown``."""
    if chars <= 0 or not item.evidence:
        return []
    posts = list(item.evidence)
    first_index = next((i for i, post in enumerate(posts) if post.first), 0)
    names = [item.entry.term, *item.entry.aliases]
    repeated = [
        post.post_id for i, post in enumerate(posts) if i != first_index and post.post_id in shown
    ]
    fresh = [i for i, post in enumerate(posts) if i == first_index or post.post_id not in shown]
    order = sorted(fresh, key=lambda i: (abs(i - first_index), i))
    allowance: dict[int, int] = {}
    remaining = chars
    for rank, index in enumerate(order):
        text_len = len(" ".join(posts[index].text.split()))
        if rank == 0:
            share = remaining if len(order) == 1 else max(remaining // 2, MIN_EVIDENCE_CHARS)
            if posts[index].post_id in shown:  # shown above: only the lines around the term
                share = min(share, REPEATED_FIRST_CHARS)
        else:
            share = remaining // (len(order) - rank)
        share = min(share, text_len, remaining)
        if share < 40 and share < text_len:
            continue
        allowance[index] = share
        remaining -= share
    lines = []
    for index, post in enumerate(posts):
        if index not in allowance:
            continue
        label = post.label
        if post.first:
            again = post.post_id in shown
            label += ", first appearance" + (", also above" if again else "")
        lines.append(f">>{post.post_id} ({label}): {_window(post.text, names, allowance[index])}")
        shown.add(post.post_id)
    if repeated:
        lines.append("also around it (shown above): " + " ".join(f">>{i}" for i in repeated))
    return lines


def _source_refs(provenance: Sequence[Provenance]) -> str:
    """The entry's source posts, each once (its first quote), then how many more posts: a
    count of posts, never of provenance rows, so "and N more" and what is listed add up."""
    first: dict[int, Provenance] = {}
    for item in provenance:
        first.setdefault(item.post_id, item)
    shown = []
    for item in list(first.values())[:MAX_SOURCES_SHOWN]:
        quote = _one_line(item.quote, QUOTE_CHARS)
        shown.append(f'>>{item.post_id} "{quote}"' if quote else f">>{item.post_id}")
    more = len(first) - len(shown)
    if more > 0:
        shown.append(f"and {more} more")
    return "; ".join(shown) if shown else "(none)"


def render_item(item: CurationItem, evidence_chars: int, shown: set[int] | None = None) -> str:
    """One entry's block; ``shown`` carries the evidence posts already in the message."""
    entry = item.entry
    lines = [f"## Entry E{entry.id}: {entry.term}", f"- {entry_line(entry)}"]
    if entry.first_seen_post is not None:
        seen = f"first seen: >>{entry.first_seen_post} (thread {entry.first_seen_thread})"
    else:
        seen = "first seen: unknown"
    age = "new in this thread" if item.new_in_thread else "still tentative from an earlier thread"
    if item.quiet_threads > 0:
        age += f"; {NOT_NAMED_SINCE} {item.quiet_threads}"
    if item.story_ends:
        age += f"; {STORY_ENDS}"
    if entry.status == "rejected":
        age = (
            f"{NAMED_AGAIN} {len(item.named_again)} post(s) "
            f"({' '.join(f'>>{post}' for post in item.named_again[:MAX_SOURCES_SHOWN])}): "
            "CONFIRM to restore it, or leave it out to keep it rejected"
        )
    lines.append(f"{seen} · {age}")
    lines.append(f"sources: {_source_refs(item.provenance)}")
    evidence = _evidence_lines(item, evidence_chars, set() if shown is None else shown)
    if evidence:
        lines.append("### Evidence")
        lines.extend(evidence)
    lines.append("### Similar entries")
    if item.similar:
        lines.extend(
            f"- similar: {entry_line(other, definition_chars=SIMILAR_DEFINITION_CHARS)}"
            for other in item.similar
        )
    else:
        lines.append("(none)")
    return "\n".join(lines)


def _render(items: Sequence[CurationItem], heading: ThreadHeading | None, chars: int) -> str:
    count = f"{len(items)} tentative entr{'y' if len(items) == 1 else 'ies'} to review"
    where = f'thread {heading.thread_id} "{heading.title}" · ' if heading else ""
    parts = [f"{TASK_LINE}\n{where}{count}"]
    shown: set[int] = set()
    parts.extend(render_item(item, chars, shown) for item in items)
    parts.append(ANSWER_LINE)
    return "\n\n".join(parts) + "\n"


def build_curate_message(
    items: Sequence[CurationItem],
    *,
    heading: ThreadHeading | None = None,
    token_budget: int = 6000,
    evidence_chars: int = DEFAULT_EVIDENCE_CHARS,
    count_tokens: TokenCounter | None = None,
) -> str:
    """The curate message for ``items``, within ``token_budget`` when possible.

    Evidence is cut first: each entry's evidence allowance shrinks (binary search) to the largest
    that fits, down to none. What remains per entry (its line, sources, similar entries) is
    itself bounded, so the message is never unbounded; `plan_batches` keeps a batch small enough
    to fit with a useful amount of evidence.
    """
    count = count_tokens or approx_tokens
    text = _render(items, heading, evidence_chars)
    if count(text) <= token_budget or evidence_chars <= 0:
        return text
    # The largest evidence allowance that fits, to within EVIDENCE_STEP characters.
    low, high = 0, evidence_chars
    best = _render(items, heading, 0)
    while high - low > EVIDENCE_STEP:
        middle = (low + high) // 2
        trial = _render(items, heading, middle)
        if count(trial) <= token_budget:
            low, best = middle, trial
        else:
            high = middle
    return best


def plan_batches(
    items: Sequence[CurationItem],
    *,
    heading: ThreadHeading | None = None,
    token_budget: int = 6000,
    count_tokens: TokenCounter | None = None,
    max_entries: int | None = None,
) -> list[list[CurationItem]]:
    """Split ``items`` into batches whose message fits ``token_budget`` with about half the
    default evidence per entry (a single entry that cannot fit is a batch of its own), of at
    most ``max_entries`` entries (the answer's room: one line each)."""
    count = count_tokens or approx_tokens
    batches: list[list[CurationItem]] = []
    current: list[CurationItem] = []
    for item in items:
        trial = [*current, item]
        full = max_entries is not None and len(current) >= max_entries
        if current and (
            full or count(_render(trial, heading, PLANNED_EVIDENCE_CHARS)) > token_budget
        ):
            batches.append(current)
            current = [item]
        else:
            current = trial
    if current:
        batches.append(current)
    return batches


def build_retry_message(problems: Sequence[str], entry_ids: Sequence[int]) -> str:
    """The error note appended after a malformed answer; asks again for the listed entries."""
    lines = [TASK_LINE, "Your previous answer could not be applied:"]
    lines.extend(f"- {problem}" for problem in problems)
    wanted = ", ".join(f"E{entry_id}" for entry_id in entry_ids)
    lines.append(f"Answer again, one line per entry as before, for these entries only: {wanted}.")
    return "\n".join(lines) + "\n"


# -- the answer ----------------------------------------------------------------------------------


@dataclass(slots=True)
class ParsedAnswer:
    """The valid decisions of an answer, and one line per item that was not valid.

    ``cut``: the answer was cut off (``finish_reason`` "length"): its last, incomplete line was
    not read, and ``decided`` names the entries its complete lines decided, so the caller can
    ask again for the rest."""

    decisions: list[CurateDecision] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    found_json: bool = False
    cut: bool = False

    @property
    def found(self) -> bool:
        """The answer holds decisions in a form this parser reads (lines or JSON)."""
        return self.found_json

    @property
    def decided(self) -> list[int]:
        """The entries a valid decision of the answer names, in answer order."""
        return list(dict.fromkeys(decision.entry_id for decision in self.decisions))


class DecisionFormatError(AgentError):
    """The curator's answer has no usable decisions, or some decisions in it are invalid."""

    def __init__(self, message: str, parsed: ParsedAnswer) -> None:
        super().__init__(message)
        self.parsed = parsed


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*\Z", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
_KINDS = "|".join(DECISION_KINDS)
_DECISION_LINE = re.compile(
    rf"^[\s>*#`-]*\[?E(\d+)\]?[\s:.,)*`-]*\b({_KINDS})\b[\s:.,*`-]*(.*?)[\s`*]*$",
    re.IGNORECASE,
)
_TARGET = re.compile(r"^(?:into\s+|->\s*|→\s*)?\[?E(\d+)\]?\b[\s:,.;-]*(.*)$", re.IGNORECASE)
_ENTRY_AT_START = re.compile(r"^[\s>*#`-]*\[?E\d+\b")
_NONE = re.compile(r"^[\s*`\"'.]*none[\s*`\"'.!]*$", re.IGNORECASE)


def _line_item(line: str) -> dict[str, object] | None:
    """A decision line as the fields of a `CurateDecision`, or None if it is not one."""
    match = _DECISION_LINE.match(line)
    if match is None:
        return None
    entry, kind, rest = match.group(1), match.group(2).upper(), match.group(3).strip()
    item: dict[str, object] = {"entry_id": int(entry), "decision": kind}
    if kind == "MERGE":
        target = _TARGET.match(rest)
        if target is not None:
            item["target_entry_id"] = int(target.group(1))
            rest = target.group(2).strip()
    if kind == "REVISE":
        item["definition"] = rest
    elif rest:
        item["reasoning"] = rest
    return item


def _line_items(text: str, *, cut: bool) -> tuple[list[dict[str, object]], list[str]]:
    """The decision lines of ``text`` and the lines that start with an entry id but are not
    decisions. A cut answer's last line is incomplete: it is not read."""
    lines = text.splitlines()
    if cut and lines and not text.endswith("\n"):
        lines = lines[:-1]
    items: list[dict[str, object]] = []
    unreadable: list[str] = []
    for line in lines:
        item = _line_item(line)
        if item is not None:
            items.append(item)
        elif _ENTRY_AT_START.match(line):
            unreadable.append(line.strip())
    return items, unreadable


def _json_candidates(text: str) -> list[object]:
    """JSON values found in ``text``: fenced blocks first, then the whole text, then the first
    decodable value starting at each ``{`` or ``[``."""
    decoder = json.JSONDecoder()
    found: list[object] = []
    for block in _FENCE.findall(text):
        try:
            found.append(json.loads(block))
        except json.JSONDecodeError:
            continue
    if found:
        return found
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    for index, char in enumerate(text):
        if char not in "{[":
            continue
        try:
            value, _end = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            continue
        return [value]
    return []


def _decision_items(value: object) -> list[object] | None:
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in ("decisions", "decision_list", "results"):
            if isinstance(value.get(key), list):
                return value[key]
        if "decision" in value or "action" in value:
            return [value]
    return None


def _describe(index: int, raw: object, error: ValidationError) -> str:
    where = f"item {index + 1}"
    if isinstance(raw, dict):
        ident = raw.get("entry_id", raw.get("id", raw.get("entry")))
        if ident is not None:
            where = f"E{ident}" if isinstance(ident, int) else f"{where} ({ident})"
    reasons = "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or 'item'}: "
        f"{str(err['msg']).removeprefix('Value error, ')}"
        for err in error.errors()
    )
    return f"{where}: {reasons}"


def parse_answer(text: str, *, cut: bool = False) -> ParsedAnswer:
    """The decisions in the model's answer: one line per decision (``E12 CONFIRM``,
    ``E7 MERGE E3 reason``, ``E4 REVISE <definition>``), tolerant of list markers, brackets,
    Markdown and ``<think>`` blocks; a JSON answer (``{"decisions": [...]}``) is read too.

    ``cut``: the answer was cut off; its last line, incomplete, is not read, and every complete
    line is (``ParsedAnswer.decided``). Invalid items are reported in ``problems``, valid ones
    kept."""
    cleaned = _OPEN_THINK.sub("", _THINK.sub("", text or ""))
    parsed = ParsedAnswer(cut=cut)
    raw_items: list[object] | None
    line_items, unreadable = _line_items(cleaned, cut=cut)
    if line_items:
        raw_items = list(line_items)
        parsed.problems.extend(
            f"cannot read the line {line[:80]!r}; write E<n> CONFIRM|REJECT|MERGE E<m>|REVISE"
            for line in unreadable
        )
    else:
        raw_items = None
        for candidate in _json_candidates(cleaned):
            raw_items = _decision_items(candidate)
            if raw_items is not None:
                break
    if raw_items is None and _NONE.match(cleaned):  # deliberately decides nothing
        parsed.found_json = True
        return parsed
    if raw_items is None:
        parsed.problems.append(
            "no decision lines (E<n> CONFIRM, ...) were found in the answer"
            if cleaned.strip()
            else "the answer was empty"
        )
        return parsed
    parsed.found_json = True
    for index, raw in enumerate(raw_items):
        try:
            parsed.decisions.append(CurateDecision.model_validate(raw))
        except ValidationError as exc:
            parsed.problems.append(_describe(index, raw, exc))
    return parsed


def parse_decisions(text: str) -> list[CurateDecision]:
    """The decisions in ``text``; `DecisionFormatError` (with ``.parsed``: the valid decisions
    and one line per problem) when none is found or any item is invalid."""
    parsed = parse_answer(text)
    if parsed.problems:
        raise DecisionFormatError(
            "malformed curator answer: " + " | ".join(parsed.problems), parsed
        )
    return parsed.decisions
