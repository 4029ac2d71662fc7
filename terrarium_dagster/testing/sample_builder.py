"""Regenerate `quest.json` and `gold.yaml` from `_story.txt`, the source of the sample quest.

Run from a source checkout: `python -m terrarium_dagster.testing.sample_builder`. The output is
deterministic (a seeded `random.Random` picks ids and minutes); `--check` exits 1 if the shipped
files differ from what the source gives.

Story source format (`_story.txt`): a line `@@ thread <YYYY-MM-DDTHH:MM> <title>` opens a thread
(UTC start time); a line `@@ <kind> key=value ...` opens a post whose body is the following lines.
Kinds: `op` (the QM's opening post), `qm` (story update), `qmdrop` (story update without the trip,
tagged `dropped_trip`), `tally` (vote tally), `qmchat` (the QM talking, not story), `anon` (a
player). Keys: `label`, `gap` (minutes since the previous post), `file` (attachment name), `who`
(a recurring player), `name`. In bodies: `>>@label` quotes a post of the same thread,
`>>@@label` a post of another thread, `>>@prev` the post just before; a line starting with `>`
is greentext; `[b] [i] [s]` are markup; `{tally}` / `{tally+}` in a tally expand to the counted
`[X]` votes since the last story post (`+` lists the voters).
"""

from __future__ import annotations

import argparse
import datetime as dt
import html
import json
import random
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from terrarium_dagster.corpus.sample import SAMPLE_TABLES
from terrarium_dagster.testing.synthetic import escape_html

HERE = Path(__file__).resolve().parent.parent / "corpus" / "sample"
STORY_PATH = HERE / "_story.txt"
DATA_PATH = HERE / "quest.json"
ABOUT = (
    "Lanternwake Quest: terrarium-dagster's bundled sample corpus (banished.db tables). An "
    "original story written for this project. Generated from _story.txt by "
    "testing/sample_builder.py; edit the story and regenerate instead of editing this file."
)
GOLD_PATH = HERE / "gold.yaml"

FIRST_POST_ID = 32266754
SEED = 20191004
BOARD = "qst"
QM_NAME = "Quest Master"
QM_TRIP = "!!Qm8xZtW3vLs"
PLAYERS: dict[str, tuple[str, str]] = {
    "lore": ("Anonymous", "!Kx2rVq9TeE"),
    "moth": ("Moth Enjoyer", "!Mh7pQz2Lw0"),
}
STORY_KINDS = frozenset({"op", "qm", "qmdrop"})
QM_KINDS = STORY_KINDS | {"tally", "qmchat"}
KINDS = QM_KINDS | {"anon"}

# The gold glossary. `expect`: label of the story post where the term (or an alias) first
# appears; `changes`: label of the story post where its meaning turns.
GOLD: list[dict[str, Any]] = [
    {
        "term": "Orrowmere",
        "kind": "place",
        "expect": "t1op",
        "note": "The lake city whose lamps hold back the fog every night.",
    },
    {
        "term": "Greywash",
        "kind": "magic",
        "expect": "t1op",
        "note": "The fog off the lake that erases the memories of anyone it covers.",
        "changes": "t4s2b",
        "change_note": "Revealed at the Fathom Gate as the smoke of three hundred years of "
        "memories burned in the Ninefold Lantern, settled on the lake (hinted at the end of "
        "thread 3).",
    },
    {
        "term": "wickwarden",
        "kind": "title",
        "expect": "t1op",
        "note": "A lamp-keeper of the Sodality who trims the city's lamps and sings the "
        "candlecant to them; Sorrel is an apprentice one.",
    },
    {
        "term": "Sorrel Vane",
        "aliases": ["Sorrel", "Vane", "Warden Vane"],
        "kind": "person",
        "expect": "t1op",
        "note": "The protagonist: a nineteen-year-old apprentice wickwarden.",
    },
    {
        "term": "Sodality of the Steady Flame",
        "aliases": ["Sodality"],
        "kind": "faction",
        "expect": "t1op",
        "note": "The guild that keeps Orrowmere's lamps and collects the wick-tithe.",
    },
    {
        "term": "Ambrose Quill",
        "aliases": ["Old Quill", "Quill", "Grandpa Wick"],
        "kind": "person",
        "expect": "t1op",
        "note": "Sorrel's gruff teacher; secretly a draw-priest. 'Grandpa Wick' is a players' "
        "nickname the story adopts in thread 4.",
    },
    {
        "term": "Lowlamp",
        "kind": "place",
        "expect": "t1op",
        "note": "The oldest, poorest district of Orrowmere: stilt-houses over the lake.",
    },
    {
        "term": "Cinder Stair",
        "kind": "place",
        "expect": "t1op",
        "note": "A stair in the Lowlamp whose great lamp, the Old Lady, is cut in thread 1.",
    },
    {
        "term": "candlecant",
        "kind": "magic",
        "expect": "t1s2a",
        "note": "The old words a wickwarden says into a flame to make it push back the fog.",
    },
    {
        "term": "Jory Blackwick",
        "aliases": ["Jory", "Blackwick"],
        "kind": "person",
        "expect": "t1s2a",
        "note": "Sorrel's fellow apprentice, who cut the Old Lady's wick on the Provost's orders.",
    },
    {
        "term": "tithe-jar",
        "kind": "item",
        "expect": "t1s2b",
        "note": "A sealed clay pot each household sets on its doorstep before Lanternwake and "
        "carries to the Wickhouse.",
    },
    {
        "term": "Lanternwake",
        "kind": "custom",
        "expect": "t1s2b",
        "note": "The yearly festival when the city brings its tithe-jars up the hill.",
        "changes": "t5s4b",
        "change_note": "After the lamps stop eating, Lanternwake becomes the night of the "
        "tellingfire, when memories are shared aloud instead of taken.",
    },
    {
        "term": "wick-tithe",
        "kind": "custom",
        "expect": "t1s2b",
        "note": "The yearly tithe every household pays to feed the lamps, said to be oil and "
        "tallow.",
        "changes": "t3s2a",
        "change_note": "The smoke-ledger shows the tithe is one memory per household a year, "
        "drawn by the jar and burned in the Ninefold Lantern.",
    },
    {
        "term": "Amberly Hask",
        "aliases": ["Provost Hask", "the Provost", "Hask"],
        "kind": "person",
        "expect": "t1s2b",
        "note": "The Provost who rules the Sodality; first mentioned only by her title.",
    },
    {
        "term": "Old Lady",
        "kind": "item",
        "expect": "t1s2c",
        "note": "The Lowlamp children's name for the great lamp at the top of Cinder Stair.",
    },
    {
        "term": "Wickhouse",
        "kind": "place",
        "expect": "t1s2c",
        "note": "The Sodality's black stone tower on the hill, with smoking chimneys.",
    },
    {
        "term": "wickknife",
        "kind": "item",
        "expect": "t1s3a",
        "note": "The trimming knife every wickwarden carries; the Old Lady's wick was cut "
        "with one.",
    },
    {
        "term": "murkmoth",
        "aliases": ["little carriers"],
        "kind": "creature",
        "expect": "t1s3b",
        "note": "A slate-grey moth that eats lamp flames; the primers say kill on sight.",
        "changes": "t3s2b",
        "change_note": "Murkmoths eat the memory in the light, not the light, and hold it "
        "unburned; the Ashkari call them the little carriers.",
    },
    {
        "term": "fogstruck",
        "kind": "magic",
        "expect": "t1s3b",
        "note": "Said of someone the Greywash has emptied of memory; said not to wear off.",
    },
    {
        "term": "Tobiah Leck",
        "aliases": ["the man on the stair", "Leck", "Toby"],
        "kind": "person",
        "expect": "t1s3b",
        "note": "The fogstruck clerk found under the Old Lady; clerk of the smoke-ledger, "
        "drawn in full on the Provost's order. Surname read out in thread 2, full name in "
        "thread 3.",
    },
    {
        "term": "Pim",
        "kind": "creature",
        "expect": "t1s4a",
        "note": "The murkmoth Sorrel keeps in her lantern; the name was a players' write-in.",
    },
    {
        "term": "Tongueless Bell",
        "kind": "item",
        "expect": "t1s4a",
        "note": "A bell with no clapper: the sign of the Quiet Choir, worn by Ottoline.",
    },
    {
        "term": "Quiet Choir",
        "aliases": ["Choir"],
        "kind": "faction",
        "expect": "t1s4a",
        "note": "A Lowlamp group the Sodality calls lamp-breakers, who sit in silence and listen.",
        "changes": "t4s2b",
        "change_note": "Revealed to be the families of driftlings, listening for their own "
        "people in the fog; not a cult.",
    },
    {
        "term": "Drowned Chapel",
        "aliases": ["Saint Ebba's"],
        "kind": "place",
        "expect": "t1s4a",
        "note": "A half-flooded church at the bottom of the Lowlamp where the Quiet Choir meets.",
    },
    {
        "term": "gloamhound",
        "kind": "creature",
        "expect": "t1s4b",
        "note": "A tall white-eyed dog of the Sodality's watch that can smell the fog.",
    },
    {
        "term": "Ismay Rook",
        "aliases": ["Captain Rook", "Rook"],
        "kind": "person",
        "expect": "t1s4b",
        "note": "Captain of the Sodality's watch; keeps a little black book and sides with "
        "Sorrel at the end.",
    },
    {
        "term": "Ottoline",
        "aliases": ["Sister Ottoline", "Bell-Sister", "Ottie"],
        "kind": "person",
        "expect": "t2s2a",
        "note": "Leader of the Quiet Choir, called the Bell-Sister; her brother is a driftling.",
    },
    {
        "term": "Unwicking",
        "kind": "custom",
        "expect": "t2s2b",
        "note": "The funeral rite in which a warden snuffs the candle of the dead; the Choir "
        "holds them for the lost.",
    },
    {
        "term": "driftling",
        "kind": "creature",
        "expect": "t2s2b",
        "note": "A tall, slow, faceless shape that walks in the Greywash; said to be a "
        "fog-creature.",
        "changes": "t4s1c",
        "change_note": "Driftlings are people drawn in full by the fog or the Sodality, still "
        "walking.",
    },
    {
        "term": "tallowglass",
        "kind": "item",
        "expect": "t2s3a",
        "note": "Glass from an old lamp hood with a flame living in it; held to the ear, it "
        "carries the voices in the fire.",
    },
    {
        "term": "flamesight",
        "kind": "magic",
        "expect": "t2s3a",
        "note": "The gift of seeing memories in a flame; Sorrel has it.",
    },
    {
        "term": "Dakh'ren",
        "kind": "person",
        "expect": "t2s4b",
        "note": "An Ashkari fog-diver with bells on his sleeves who guides the Choir through "
        "the fog.",
    },
    {
        "term": "Ashkari",
        "kind": "faction",
        "expect": "t2s4b",
        "note": "The people of the Ashkar Fens, who walk in fog instead of fighting it.",
    },
    {
        "term": "Ashkar Fens",
        "kind": "place",
        "expect": "t2s4b",
        "note": "The marshes downriver of Orrowmere, home of the Ashkari and the murkmoths.",
    },
    {
        "term": "wending",
        "kind": "magic",
        "expect": "t2s4b",
        "note": "The Ashkari way of walking through fog by thinking of small things, without "
        "pushing it back.",
    },
    {
        "term": "Oru'vael",
        "kind": "creature",
        "expect": "t2s4b",
        "note": "What the Ashkari call the one who lives in the fog and asks for things back.",
        "changes": "t4s2b",
        "change_note": "Revealed as the fog itself remembering: the city's burned memories "
        "grown into a mind that wants to go home.",
    },
    {
        "term": "lightless debt",
        "kind": "custom",
        "expect": "t2s5b",
        "note": "The penalty for a household that does not pay the wick-tithe: a month of "
        "dimmed lamps, or, for Tobiah Leck, being drawn in full.",
    },
    {
        "term": "Ninth Vault",
        "kind": "place",
        "expect": "t3op",
        "note": "The room deep under the Wickhouse, opened by the IX key, where the jars are "
        "emptied.",
    },
    {
        "term": "Ninefold Lantern",
        "aliases": ["heart-lamp"],
        "kind": "item",
        "expect": "t3s1b",
        "note": "The great nine-hooded lamp in the Ninth Vault that burns the wick-tithe.",
    },
    {
        "term": "draw-priests",
        "aliases": ["draw-priest"],
        "kind": "faction",
        "expect": "t3s1b",
        "note": "The Sodality's hidden priesthood in grey robes who open the jars into the "
        "Ninefold Lantern.",
    },
    {
        "term": "smoke-ledger",
        "kind": "item",
        "expect": "t3s2a",
        "note": "The Sodality's great book recording every memory drawn and burned.",
    },
    {
        "term": "Fathom Gate",
        "kind": "place",
        "expect": "t4s2a",
        "note": "The old iron sluice in the lake where the fog pools thickest.",
    },
    {
        "term": "Hollis Marr",
        "aliases": ["Hollis"],
        "kind": "person",
        "expect": "t4s2a",
        "note": "Ottoline's brother, a driftling for eleven years until his jar is opened.",
    },
    {
        "term": "tellingfire",
        "kind": "custom",
        "expect": "t5s4b",
        "note": "The new Lanternwake custom: telling a memory aloud at the gate and carrying "
        "a candle home.",
    },
]


@dataclass
class SourcePost:
    kind: str
    attrs: dict[str, str]
    lines: list[str]
    label: str
    line_no: int


@dataclass
class SourceThread:
    title: str
    start: dt.datetime
    posts: list[SourcePost] = field(default_factory=list)


@dataclass
class BuiltPost:
    thread_id: int
    id: int
    name: str
    trip_code: str | None
    subject: str | None
    time: int
    file_url: str | None
    file_name: str | None
    body: str
    tags: list[str]
    links: list[int]
    label: str
    kind: str


@dataclass
class BuiltThread:
    id: int
    title: str
    posts: list[BuiltPost]


class StoryError(ValueError):
    """The story source is malformed."""


_HEADER = re.compile(r"^@@ (\S+)(.*)$")
_QUOTE = re.compile(r">>(@@?)([\w-]+)")
_VOTE = re.compile(r"^\[[xX]\]\s*(.+?)\s*$")
_OPTION = re.compile(r"^\[ \]\s*(.+?)\s*$")
_MARKUP = {f"[{t}]": f"<{t}>" for t in "bis"} | {f"[/{t}]": f"</{t}>" for t in "bis"}


def parse_story(text: str) -> list[SourceThread]:
    """Split the story source into threads and posts."""
    threads: list[SourceThread] = []
    current: SourcePost | None = None
    auto = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        match = _HEADER.match(line)
        if match is None:
            if current is None:
                if line.strip():
                    raise StoryError(f"line {line_no}: text outside a post")
                continue
            current.lines.append(line)
            continue
        kind, rest = match.group(1), match.group(2).strip()
        if kind == "thread":
            stamp, _, title = rest.partition(" ")
            start = dt.datetime.fromisoformat(stamp).replace(tzinfo=dt.UTC)
            threads.append(SourceThread(title=title.strip(), start=start))
            current = None
            continue
        if kind not in KINDS:
            raise StoryError(f"line {line_no}: unknown post kind {kind!r}")
        if not threads:
            raise StoryError(f"line {line_no}: post before the first thread")
        attrs = dict(part.split("=", 1) for part in rest.split())
        auto += 1
        label = attrs.pop("label", f"_{auto}")
        current = SourcePost(kind=kind, attrs=attrs, lines=[], label=label, line_no=line_no)
        thread = threads[-1]
        if (kind == "op") != (not thread.posts):
            raise StoryError(f"line {line_no}: a thread's first post, and only it, is the op")
        thread.posts.append(current)
    for thread in threads:
        for post in thread.posts:
            while post.lines and not post.lines[-1].strip():
                post.lines.pop()
            while post.lines and not post.lines[0].strip():
                post.lines.pop(0)
    return threads


def _default_gap(rng: random.Random, previous: str, kind: str) -> float:
    """Minutes between two posts when the source does not say."""
    if kind in STORY_KINDS:
        return rng.uniform(1, 3) if previous in STORY_KINDS else rng.uniform(28, 52)
    if kind == "tally":
        return rng.uniform(3, 12)
    if kind == "qmchat":
        return rng.uniform(2, 5)
    if previous in STORY_KINDS:
        return rng.uniform(3, 8)
    return rng.uniform(1, 6)


def _vote_key(text: str) -> str:
    return re.sub(r"\W+", " ", text.casefold()).strip()


def _expand_tally(line: str, votes: list[tuple[str, str]]) -> list[str]:
    """Lines counting `votes` ((text, voter label) pairs) for `{tally}` or `{tally+}`."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for text, voter in votes:
        groups.setdefault(_vote_key(text), (text, []))[1].append(voter)
    ranked = sorted(groups.values(), key=lambda group: -len(group[1]))
    out: list[str] = []
    for text, voters in ranked:
        out.append(f"[X] {text} - {len(voters)}")
        if line.strip() == "{tally+}":
            out.append(" ".join(f">>@{voter}" for voter in voters))
    return out


def _render(lines: list[str], resolve: dict[str, tuple[int, int]], thread_id: int):
    """Imageboard HTML for the body lines and the ids it quotes."""
    links: list[int] = []

    def quotelink(match: re.Match[str]) -> str:
        marker, label = match.group(1), match.group(2)
        if label not in resolve:
            raise StoryError(f"unknown quote label {label!r}")
        target_thread, target = resolve[label]
        if marker == "@" and target_thread != thread_id:
            raise StoryError(f"{label!r} is in another thread; quote it with >>@@")
        if target not in links:
            links.append(target)
        href = f"#p{target}" if marker == "@" else f"/{BOARD}/thread/{target_thread}#p{target}"
        return f'<a href="{href}" class="quotelink">&gt;&gt;{target}</a>'

    out: list[str] = []
    for line in lines:
        if line.startswith(">") and not _QUOTE.match(line):
            html_line = f'<span class="quote">{escape_html(line)}</span>'
        else:
            pieces = _QUOTE.split(line)
            parts: list[str] = []
            for index in range(0, len(pieces), 3):
                parts.append(escape_html(pieces[index]))
                if index + 2 < len(pieces):
                    match = _QUOTE.match(f">>{pieces[index + 1]}{pieces[index + 2]}")
                    assert match is not None
                    parts.append(quotelink(match))
            html_line = "".join(parts)
        for source, tag in _MARKUP.items():
            html_line = html_line.replace(source, tag)
        out.append(html_line)
    return "<br>".join(out), links


def build(threads: list[SourceThread]) -> list[BuiltThread]:
    """Assign ids, times, names and tags; render bodies; count tallies."""
    rng = random.Random(SEED)
    resolve: dict[str, tuple[int, int]] = {}
    post_id = FIRST_POST_ID
    previous_time: int | None = None
    placed: list[tuple[SourceThread, list[tuple[SourcePost, int, int]]]] = []
    for thread in threads:
        time = int(thread.start.timestamp())
        if previous_time is not None:
            if time <= previous_time:
                raise StoryError(f"thread {thread.title!r} starts before the previous one ends")
            post_id += int((time - previous_time) / 60 * rng.uniform(1.6, 2.4))
        rows: list[tuple[SourcePost, int, int]] = []
        for index, post in enumerate(thread.posts):
            if index:
                minutes = float(post.attrs["gap"]) if "gap" in post.attrs else None
                if minutes is None:
                    minutes = _default_gap(rng, thread.posts[index - 1].kind, post.kind)
                seconds = max(25, int(minutes * 60) + rng.randint(-20, 20))
                time += seconds
                post_id += max(1, int(seconds / 60 * rng.uniform(0.7, 2.3))) + rng.randint(1, 5)
            if post.label in resolve:
                raise StoryError(f"line {post.line_no}: duplicate label {post.label!r}")
            resolve[post.label] = (rows[0][1] if rows else post_id, post_id)
            rows.append((post, post_id, time))
        previous_time = time
        placed.append((thread, rows))

    built: list[BuiltThread] = []
    for thread, rows in placed:
        thread_id = rows[0][1]
        posts: list[BuiltPost] = []
        votes: list[tuple[str, str]] = []
        options: set[str] = set()
        for index, (post, pid, time) in enumerate(rows):
            lines = [
                line.replace(">>@prev", f">>@{rows[index - 1][0].label}") if index else line
                for line in post.lines
            ]
            if post.kind in STORY_KINDS:
                votes, options = [], set()
                options |= {_vote_key(m.group(1)) for m in map(_OPTION.match, lines) if m}
            elif post.kind == "anon":
                for match in filter(None, map(_VOTE.match, lines)):
                    text = match.group(1)
                    if _vote_key(text) not in options and not text.startswith("Name:"):
                        raise StoryError(f"line {post.line_no}: vote for no option: {text!r}")
                    votes.append((text, post.label))
            elif post.kind == "tally":
                expanded: list[str] = []
                for line in lines:
                    if line.strip() in ("{tally}", "{tally+}"):
                        if not votes:
                            raise StoryError(f"line {post.line_no}: a tally with no votes")
                        expanded.extend(_expand_tally(line, votes))
                    else:
                        expanded.append(line)
                lines = expanded
            body, links = _render(lines, resolve, thread_id)
            posts.append(_built_post(post, thread, thread_id, pid, time, body, links, rng))
        built.append(BuiltThread(id=thread_id, title=thread.title, posts=posts))
    return built


def _built_post(
    post: SourcePost,
    thread: SourceThread,
    thread_id: int,
    pid: int,
    time: int,
    body: str,
    links: list[int],
    rng: random.Random,
) -> BuiltPost:
    kind = post.kind
    tags = {
        "op": ["op_post", "qm_post", "story_post"],
        "qm": ["qm_post", "story_post"],
        "qmdrop": ["qm_post", "story_post", "dropped_trip"],
        "tally": ["qm_post", "vote_tally_post"],
        "qmchat": ["qm_post"],
        "anon": [],
    }[kind]
    if kind in QM_KINDS:
        name, trip = QM_NAME, (None if kind == "qmdrop" else QM_TRIP)
    else:
        name, trip = PLAYERS.get(post.attrs.get("who", ""), ("Anonymous", None))
    name = post.attrs.get("name", name)
    file_name = post.attrs.get("file")
    file_url = None
    if file_name is not None:
        suffix = file_name.rsplit(".", 1)[-1]
        file_url = f"https://i.quest.example/{BOARD}/{time}{rng.randint(100, 999)}.{suffix}"
    return BuiltPost(
        thread_id=thread_id,
        id=pid,
        name=name,
        trip_code=trip,
        subject=thread.title if kind == "op" else None,
        time=time,
        file_url=file_url,
        file_name=file_name,
        body=body,
        tags=tags,
        links=links,
        label=post.label,
        kind=kind,
    )


def render_data(threads: list[BuiltThread]) -> str:
    """The corpus as JSON: each table of the banished.db schema as its columns and its rows, one
    row a line (the posts in story order, each post's tags and links in the order written)."""
    tables: dict[str, tuple[tuple[str, ...], list[list[Any]]]] = {
        table: (columns, []) for table, columns in SAMPLE_TABLES.items()
    }
    for thread in threads:
        tables["thread"][1].append([thread.id, thread.title])
        for post in thread.posts:
            tables["post"][1].append([getattr(post, column) for column in SAMPLE_TABLES["post"]])
            tables["tag"][1].extend([post.id, tag] for tag in post.tags)
            tables["link"][1].extend([post.id, target] for target in post.links)
    out = [
        "{",
        f' "about": {json.dumps(ABOUT)},',
    ]
    for number, (table, (columns, rows)) in enumerate(tables.items(), start=1):
        out.append(f' "{table}": {{')
        out.append(f'  "columns": {json.dumps(list(columns))},')
        out.append('  "rows": [')
        out += [f"   {json.dumps(row, ensure_ascii=False)}," for row in rows[:-1]]
        out += [f"   {json.dumps(row, ensure_ascii=False)}" for row in rows[-1:]]
        out.append("  ]")
        out.append(" }," if number < len(tables) else " }")
    out += ["}", ""]
    return "\n".join(out)


def clean_text(body: str) -> str:
    """Plain text of an imageboard body (for matching terms)."""
    return html.unescape(re.sub(r"<[^>]+>", "", body.replace("<br>", "\n")))


def term_pattern(name: str) -> re.Pattern[str]:
    """A whole-word, case-insensitive match of `name`, allowing a plural -s/-es."""
    return re.compile(rf"(?<!\w){re.escape(name)}(?:s|es)?(?!\w)", re.IGNORECASE)


def _story_posts(threads: list[BuiltThread]) -> Iterable[BuiltPost]:
    for thread in threads:
        yield from (post for post in thread.posts if "story_post" in post.tags)


def _mid_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \"'*([")
    return bool(before) and before[-1] not in ".!?:\n-"


def gold_entries(threads: list[BuiltThread]) -> list[dict[str, Any]]:
    """The gold list with first posts found in the corpus; checks each term is detectable."""
    story = list(_story_posts(threads))
    by_label = {post.label: post for thread in threads for post in thread.posts}
    entries: list[dict[str, Any]] = []
    for spec in GOLD:
        names = [spec["term"], *spec.get("aliases", [])]
        patterns = [term_pattern(name) for name in names]
        first = next(
            (p for p in story if any(pat.search(clean_text(p.body)) for pat in patterns)), None
        )
        if first is None or first.label != spec["expect"]:
            found = first.label if first else None
            raise StoryError(f"{spec['term']}: first story post {found}, expected {spec['expect']}")
        thread_story = [clean_text(p.body) for p in story if p.thread_id == first.thread_id]
        if spec["term"][0].islower():
            count = sum(len(patterns[0].findall(text)) for text in thread_story)
            if count < 2:
                raise StoryError(f"{spec['term']}: a coinage must recur in its first thread")
        else:
            texts = [clean_text(p.body) for p in story]
            if not any(
                _mid_sentence(text, match.start())
                for pat in patterns
                for text in texts
                for match in pat.finditer(text)
                if text[match.start()].isupper()
            ):
                raise StoryError(f"{spec['term']}: never capitalised mid-sentence")
        entry: dict[str, Any] = {
            "term": spec["term"],
            "aliases": list(spec.get("aliases", [])),
            "kind": spec["kind"],
            "first_post_id": first.id,
            "thread_id": first.thread_id,
            "note": spec["note"],
            "changes_in_thread": None,
            "change_post_id": None,
            "change_note": None,
        }
        if "changes" in spec:
            turn = by_label[spec["changes"]]
            if not any(pat.search(clean_text(turn.body)) for pat in patterns):
                raise StoryError(f"{spec['term']}: not named in its change post")
            entry |= {
                "changes_in_thread": turn.thread_id,
                "change_post_id": turn.id,
                "change_note": spec["change_note"],
            }
        entries.append(entry)
    return entries


def render_gold(threads: list[BuiltThread]) -> str:
    """gold.yaml: the terms a reader of the sample quest should find in its glossary."""
    header = (
        "# Gold glossary of the bundled sample quest (Lanternwake Quest).\n"
        "# Generated by testing/sample_builder.py from its GOLD list and _story.txt; do not edit.\n"
        "# first_post_id: the first QM story post where the term or an alias appears;\n"
        "# thread_id / changes_in_thread: thread ids (the id of the thread's opening post);\n"
        "# change_post_id: the story post where the term's meaning turns.\n"
    )
    body = yaml.safe_dump(
        {"terms": gold_entries(threads)}, sort_keys=False, allow_unicode=True, width=100
    )
    return header + body


def render() -> tuple[str, str]:
    """(quest.json, gold.yaml) as the story source gives them."""
    threads = build(parse_story(STORY_PATH.read_text(encoding="utf-8")))
    return render_data(threads), render_gold(threads)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with shipped files")
    args = parser.parse_args(argv)
    data, gold = render()
    if args.check:
        stale = [
            path.name
            for path, text in ((DATA_PATH, data), (GOLD_PATH, gold))
            if not path.is_file() or path.read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"out of date: {', '.join(stale)}", file=sys.stderr)
            return 1
        return 0
    DATA_PATH.write_text(data, encoding="utf-8")
    GOLD_PATH.write_text(gold, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
