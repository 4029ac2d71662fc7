"""A deterministic synthetic quest in the banished.db schema, for benchmarks and long tests.

`generate_corpus` writes threads of imageboard posts: the quest master's story updates (runs of
`qm_post` posts), players' replies that quote them (`<a class="quotelink">`, with `link` rows) and
vote for options in greentext, vote tallies by the QM (`qm_post` + `vote_tally_post`), a QM post now
and then that lost its trip code (`dropped_trip`), image-only QM posts with an empty body, and a few
posts whose time is earlier than their predecessor's (ids out of time order). The story text is
filler English seeded with invented capitalised names, places, factions and lowercase coinages drawn
from a seeded vocabulary with a Zipf-like frequency, so a term detector has something to find.

The same arguments always give the same file, byte for byte in content (a `random.Random(seed)`
drives everything; nothing depends on hash order or the clock). The file is written under a
temporary name in one transaction and renamed into place, so a reader never sees half a corpus.
"""

from __future__ import annotations

import os
import random
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from terrarium_dagster.corpus.corpus_schema import CORPUS_SCHEMA

__all__ = ["SCHEMA", "SyntheticVocabulary", "generate_corpus", "vocabulary"]

SCHEMA = CORPUS_SCHEMA

INDEXES = (
    "CREATE INDEX post_thread ON post (thread_id, time)",
    "CREATE INDEX tag_post ON tag (post_id)",
    "CREATE INDEX link_from ON link (link_from)",
)

QM_NAME = "Quest Master"
QM_TRIP = "!!Qv3stM4st"
PLAYER_NAME = "Anonymous"
FIRST_POST_ID = 1_000_000
FIRST_TIME = 1_500_000_000

_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kh", "l", "m", "n", "p", "r")
_ONSETS += ("s", "sh", "t", "th", "v", "vr", "w", "z", "")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ai", "ei", "ou", "y")
_CODAS = ("", "", "n", "r", "l", "s", "th", "sk", "nd", "rn", "x", "m")
_PLACE_SUFFIXES = ("hold", "mere", "spire", "march", "fen", "gate", "reach", "wick", "deep")
_COINAGE_SUFFIXES = ("wort", "fire", "bane", "glass", "thread", "kin", "shard", "song", "bloom")
_FACTION_WORDS = ("Compact", "Circle", "Covenant", "Host", "Wardens", "Choir", "Lodge")
_FACTION_ADJECTIVES = ("Ashen", "Silent", "Gilded", "Hollow", "Drowned", "Pale", "Iron")
_FILLER_WORDS = (
    "the a an and but or so then now still again there here this that these those it its it's "
    "we you they he she them us our your their his her was were is are be been being had has have "
    "do did does don't can't won't could would should might must will may not no yes very more "
    "less all some any each every other another such only just even also too quite rather "
    "walk walked run ran look looked see saw hear heard speak spoke take took give gave hold held "
    "find found keep kept leave left bring brought turn turned wait waited watch watched follow "
    "followed answer answered call called open opened close closed climb climbed cross crossed "
    "road river hill forest village tower gate wall door room hall fire light shadow night day "
    "morning evening winter summer rain snow wind stone iron wood bread salt water blood bone "
    "hand eye face voice name word story song letter map sword shield bow arrow cloak lantern "
    "old young tall short quiet loud cold warm dark bright strange familiar broken whole heavy "
    "slow quick careful tired hungry wary grim glad sorry certain uncertain distant near far "
    "in on at by with without from into onto over under before after behind beside between "
    "toward across through around against along among beyond within because while until unless"
)
_FILLER = tuple(_FILLER_WORDS.split())
_VERBS = ("Go to", "Ask about", "Search", "Leave", "Follow", "Trust", "Question", "Guard")


@dataclass(frozen=True, slots=True)
class SyntheticVocabulary:
    """The invented terms of a synthetic corpus, most frequent first."""

    names: tuple[str, ...]
    places: tuple[str, ...]
    factions: tuple[str, ...]
    coinages: tuple[str, ...]
    quest: str

    @property
    def terms(self) -> tuple[str, ...]:
        """Every invented term, interleaved by kind, in descending frequency."""
        kinds = (self.names, self.places, self.coinages, self.factions)
        longest = max(len(kind) for kind in kinds)
        return tuple(kind[i] for i in range(longest) for kind in kinds if i < len(kind))


def _word(rng: random.Random, syllables: int) -> str:
    parts = []
    for _ in range(syllables):
        parts.append(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS))
    return "".join(parts)


def _unique(
    rng: random.Random, count: int, make: Callable[[random.Random], str], taken: set[str]
) -> tuple[str, ...]:
    made: list[str] = []
    while len(made) < count:
        candidate = make(rng)
        if len(candidate) >= 4 and candidate.lower() not in taken:
            taken.add(candidate.lower())
            made.append(candidate)
    return tuple(made)


def vocabulary(seed: int = 0, *, scale: int = 1) -> SyntheticVocabulary:
    """The seeded vocabulary `generate_corpus(seed=seed, vocabulary_scale=scale)` draws its terms
    from: 60 names, 30 places and 40 coinages, each times `scale`, and 12 factions times `scale`
    up to 48 (their names are drawn from 49)."""
    if scale < 1:
        raise ValueError(f"the vocabulary scale must be at least 1, not {scale}")
    rng = random.Random(f"vocabulary:{seed}")
    taken = set(_FILLER)
    names = _unique(rng, 60 * scale, lambda r: _word(r, r.choice((2, 2, 3))).capitalize(), taken)
    places = _unique(
        rng, 30 * scale, lambda r: (_word(r, 1) + r.choice(_PLACE_SUFFIXES)).capitalize(), taken
    )
    coinages = _unique(rng, 40 * scale, lambda r: _word(r, 1) + r.choice(_COINAGE_SUFFIXES), taken)
    factions = _unique(
        rng,
        12 * min(scale, 4),
        lambda r: f"the {r.choice(_FACTION_ADJECTIVES)} {r.choice(_FACTION_WORDS)}",
        taken,
    )
    quest = _unique(rng, 1, lambda r: _word(r, 2).capitalize(), taken)[0]
    return SyntheticVocabulary(names, places, factions, coinages, quest)


_SLOT = "\x00"


class _Writer:
    """Story text and HTML bodies, all drawn from one seeded random generator."""

    def __init__(self, rng: random.Random, vocab: SyntheticVocabulary) -> None:
        self.rng = rng
        self.terms = vocab.terms
        # Zipf-like: the k-th term is about 1/k as frequent as the first.
        weights = [1.0 / (rank + 1) for rank in range(len(self.terms))]
        total = 0.0
        self.cumulative: list[float] = []
        for weight in weights:
            total += weight
            self.cumulative.append(total)
        self.sentences = [self._sentence() for _ in range(3000)]

    def _sentence(self) -> str:
        rng = self.rng
        words = rng.choices(_FILLER, k=rng.randint(6, 14))
        for _ in range(rng.choice((0, 1, 1, 2))):
            words.insert(rng.randint(0, len(words)), _SLOT)
        if words[0] == _SLOT:
            words.insert(0, "And")
        else:
            words[0] = words[0].capitalize()
        ending = rng.choice((".", ".", ".", "!", "?"))
        return " ".join(words) + ending

    def fill(self, text: str) -> str:
        parts = text.split(_SLOT)
        if len(parts) == 1:
            return text
        chosen = self.rng.choices(self.terms, cum_weights=self.cumulative, k=len(parts) - 1)
        out = [parts[0]]
        for term, part in zip(chosen, parts[1:], strict=True):
            out.append(term)
            out.append(part)
        return "".join(out)

    def paragraphs(self, words: int) -> list[str]:
        """Story text of about `words` words, in paragraphs of two to five sentences."""
        rng = self.rng
        paragraphs: list[str] = []
        sentences: list[str] = []
        count = 0
        while count < words:
            sentence = self.sentences[int(rng.random() * len(self.sentences))]
            sentences.append(sentence)
            count += sentence.count(" ") + 1
            if len(sentences) >= 2 and rng.random() < 0.3:
                paragraphs.append(self.fill(" ".join(sentences)))
                sentences = []
        if sentences:
            paragraphs.append(self.fill(" ".join(sentences)))
        return paragraphs

    def option(self) -> str:
        term = self.rng.choices(self.terms, cum_weights=self.cumulative, k=1)[0]
        return f"{self.rng.choice(_VERBS)} {term}"


def escape_html(text: str) -> str:
    """`text` as imageboard HTML escapes it (`&#039;` for an apostrophe)."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&#039;")
    )


def _quotelink(post_id: int, thread_id: int, same_thread: bool) -> str:
    href = f"#p{post_id}" if same_thread else f"/qst/thread/{thread_id}#p{post_id}"
    return f'<a href="{href}" class="quotelink">&gt;&gt;{post_id}</a>'


def _greentext(text: str) -> str:
    return f'<span class="quote">&gt;{escape_html(text)}</span>'


def _check(threads: int, posts_per_thread: int, qm_ratio: float, words: Sequence[int]) -> None:
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if posts_per_thread < 1:
        raise ValueError(f"posts_per_thread must be at least 1, got {posts_per_thread}")
    if not 0.0 <= qm_ratio <= 1.0:
        raise ValueError(f"qm_ratio must be between 0 and 1, got {qm_ratio}")
    if len(words) != 2 or not 1 <= words[0] <= words[1]:
        raise ValueError(f"words_per_post must be (low, high) with 1 <= low <= high, got {words}")


def generate_corpus(
    path: str | Path,
    *,
    threads: int,
    posts_per_thread: int,
    seed: int = 0,
    qm_ratio: float = 0.35,
    words_per_post: tuple[int, int] = (40, 160),
    indexes: bool = False,
    vocabulary_scale: int = 1,
) -> Path:
    """Write a synthetic banished.db with `threads` x `posts_per_thread` posts; returns its path.

    `qm_ratio` is the long-run share of QM posts (runs of QM posts follow a two-state chain with
    that stationary share; every thread opens with a QM post). QM story posts have
    `words_per_post` words (uniform in the range); players' replies are shorter. `indexes=False`
    mirrors the real banished.db (no index besides the rowid keys); `indexes=True` adds indexes on
    post(thread_id, time), tag(post_id) and link(link_from). `vocabulary_scale` multiplies the
    invented terms (see `vocabulary`): a larger glossary. An existing file at `path` is replaced.
    """
    _check(threads, posts_per_thread, qm_ratio, words_per_post)
    target = Path(path)
    rng = random.Random(f"corpus:{seed}")
    vocab = vocabulary(seed, scale=vocabulary_scale)
    writer = _Writer(rng, vocab)
    # Two states, QM and player: stay in QM with `stay_qm`, enter it with `enter_qm`, so that the
    # stationary share of QM posts is qm_ratio = enter / (enter + 1 - stay).
    stay_qm = 0.6
    enter_qm = 1.0 if qm_ratio >= 1.0 else min(1.0, qm_ratio * (1 - stay_qm) / (1 - qm_ratio))
    low, high = words_per_post
    player_high = max(3, low // 2)

    with corpus_file(target, SCHEMA) as conn:
        post_id = FIRST_POST_ID
        time = FIRST_TIME
        previous_thread_posts: list[int] = []
        previous_thread_id = 0
        for number in range(1, threads + 1):
            thread_id = post_id
            title = f"{vocab.quest} Quest #{number}"
            post_rows: list[tuple[object, ...]] = []
            tag_rows: list[tuple[int, str]] = []
            link_rows: list[tuple[int, int]] = []
            last_qm = 0
            last_player = 0
            qm_run = True
            player_run_length = 0
            thread_posts: list[int] = []
            for index in range(posts_per_thread):
                if index == 0:
                    qm = True
                elif qm_run:
                    qm = rng.random() < stay_qm
                else:
                    qm = rng.random() < enter_qm
                qm_run = qm
                body_parts: list[str] = []
                tags: list[str] = []
                name, trip, subject, file_url, file_name = PLAYER_NAME, None, None, None, None
                if qm:
                    name, trip = QM_NAME, QM_TRIP
                    tags.append("qm_post")
                    roll = rng.random()
                    if index == 0:
                        tags += ["op_post", "story_post"]
                        subject = title
                    if index > 0 and player_run_length >= 3 and roll < 0.3:
                        tags.append("vote_tally_post")
                        body_parts.append("Tally so far:")
                        for _ in range(rng.randint(2, 4)):
                            votes = rng.randint(1, 9)
                            body_parts.append(f"{_greentext(writer.option())}: {votes}")
                    elif index > 0 and roll > 0.98:
                        file_url = f"https://files.example/qst/{post_id}.png"
                        file_name = f"map-{post_id}.png"
                        tags.append("story_post")
                    else:
                        if index > 0:
                            tags.append("story_post")
                        if index > 0 and roll > 0.95:
                            trip = None
                            tags.append("dropped_trip")
                        paragraphs = writer.paragraphs(rng.randint(low, high))
                        body_parts.append("<br><br>".join(escape_html(p) for p in paragraphs))
                        if rng.random() < 0.25:
                            body_parts.append("What do you do?")
                            for _ in range(rng.randint(2, 3)):
                                body_parts.append(_greentext(writer.option()))
                    last_qm = post_id
                    player_run_length = 0
                else:
                    quoted: list[tuple[int, int, bool]] = []
                    if last_qm:
                        quoted.append((last_qm, thread_id, True))
                    if last_player and rng.random() < 0.2:
                        quoted.append((last_player, thread_id, True))
                    if previous_thread_posts and rng.random() < 0.01:
                        quoted.append(
                            (rng.choice(previous_thread_posts), previous_thread_id, False)
                        )
                    for target_id, target_thread, same in quoted:
                        body_parts.append(_quotelink(target_id, target_thread, same))
                        link_rows.append((post_id, target_id))
                    if rng.random() < 0.7:
                        body_parts.append(_greentext(writer.option()))
                    body_parts.append(
                        escape_html(" ".join(writer.paragraphs(rng.randint(3, player_high))))
                    )
                    last_player = post_id
                    player_run_length += 1
                post_time = time
                if index > 0 and rng.random() < 0.01:
                    post_time = time - rng.randint(1, 20)  # a clock skew: id after, time before
                post_rows.append(
                    (
                        thread_id,
                        post_id,
                        name,
                        trip,
                        subject,
                        post_time,
                        file_url,
                        file_name,
                        "<br>".join(body_parts),
                    )
                )
                tag_rows.extend((post_id, tag) for tag in tags)
                thread_posts.append(post_id)
                post_id += rng.randint(1, 40)
                time += rng.randint(30, 600)
            conn.execute("INSERT INTO thread (id, title) VALUES (?, ?)", (thread_id, title))
            conn.executemany("INSERT INTO post VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", post_rows)
            conn.executemany("INSERT INTO tag (post_id, name) VALUES (?, ?)", tag_rows)
            conn.executemany("INSERT INTO link (link_from, link_to) VALUES (?, ?)", link_rows)
            previous_thread_posts = thread_posts
            previous_thread_id = thread_id
            time += rng.randint(86_400, 3 * 86_400)
        if indexes:
            for statement in INDEXES:
                conn.execute(statement)
    return target


@contextmanager
def corpus_file(target: Path, schema: str) -> Iterator[sqlite3.Connection]:
    """A corpus database made beside `target` (its `schema`, one transaction open), put in
    place of `target` when the block ends; nothing is left behind when it fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(partial, isolation_level=None)
    try:
        conn.executescript(schema)
        conn.execute("BEGIN")
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        conn.close()
        partial.unlink(missing_ok=True)
        raise
    conn.close()
    os.replace(partial, target)
