"""A generated quest whose names recur across scenes and threads, with a gold list of its names
and of the facts the story tells of each, for the concurrency tests and the throughput benchmark.

Every thing of the cast has a full name and a short form: a person `Tars Tarkas` (short: the
given name, `Tars`), a place `Old Brakhold` (short: the place word, `Brakhold`). It also has
`FACTS_PER_THING` facts, each a short predicate ("keeps a bronze lantern") that no other thing
shares. A scene mentions a few things, each in one sentence that opens with the name and states
one of its facts: `Tars Tarkas keeps a bronze lantern.` The first scene that mentions a thing
uses its full name and tells its first fact; later scenes use the full name or the short form
(one form per scene) and tell its next fact, then facts already told. Everything else is filler
English without capitalised words but the first of a sentence, so the names are the only
capitalised runs.

Scenes are runs of quest-master posts (`qm_post`, one to two posts) separated by one player's
reply, so the corpus reader cuts exactly `scenes_per_thread` scenes per thread. Each scene
introduces up to `new_per_scene` things and mentions some already introduced (the frequent ones
more often, and some rare ones only once or twice), in a shuffled order.

`generate_recurring_quest` writes the corpus (the banished.db schema) and returns the
`RecurringQuest`: the cast (the gold list: names, kind, facts told) and the path. The same
arguments give the same corpus and the same gold, byte for byte in content.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from terrarium_dagster.corpus.corpus_schema import CORPUS_SCHEMA
from terrarium_dagster.terms.english import is_english_word
from terrarium_dagster.testing.synthetic import corpus_file, vocabulary

__all__ = ["FACTS_PER_THING", "RecurringQuest", "Thing", "generate_recurring_quest"]

FACTS_PER_THING = 4
FIRST_POST_ID = 2_000_000
FIRST_TIME = 1_600_000_000
QM_NAME = "Quest Master"
QM_TRIP = "!!Rec0rr1ng"

_PLACE_MODIFIERS = ("Old", "New", "Upper", "Lower", "Greater", "High", "Far", "East")
_VERBS = (
    "keeps",
    "guards",
    "hides",
    "fears",
    "sells",
    "remembers",
    "owns",
    "watches",
    "mourns",
    "seeks",
    "carries",
    "mends",
)
_ADJECTIVES = (
    "bronze",
    "silver",
    "northern",
    "crooked",
    "sunken",
    "ancient",
    "narrow",
    "scarlet",
    "hollow",
    "frozen",
    "quiet",
    "burning",
)
_NOUNS = (
    "lantern",
    "bridge",
    "river",
    "ledger",
    "orchard",
    "bell",
    "tower",
    "map",
    "key",
    "well",
    "banner",
    "furnace",
)
_FILLER = (
    "the road was cold and the wind came down from the hills",
    "we waited by the gate until the light was gone",
    "nobody spoke for a while and the fire burned low",
    "rain fell on the roofs all through the night",
    "the market was quiet and most of the stalls were closed",
    "somewhere a dog barked and then the street was still",
    "the old stones of the wall were wet with snow",
    "there was bread and salt on the table but no one ate",
    "a bell rang twice in the distance and then stopped",
    "the river ran high and brown after the storm",
    "a lantern swung over the door of the inn",
    "the hall smelled of smoke and wet wool",
    "it was a long walk back across the fields",
    "the morning came grey and slow over the town",
)
_PLAYER_LINES = (
    "&gt;go with the plan",
    "&gt;ask them what they saw",
    "&gt;wait and watch",
    "&gt;rest first, then move",
    "I think we should be careful here.",
    "Agreed, let us keep going.",
)


@dataclass(frozen=True, slots=True)
class Thing:
    """One thing of the cast: its names and the facts the story tells of it (in order)."""

    full: str
    short: str
    kind: str  # "character" or "place"
    facts: tuple[str, ...]  # predicates, e.g. "keeps a bronze lantern"
    told: tuple[str, ...] = ()  # the facts some scene actually states, in order first told
    scenes: tuple[str, ...] = ()  # the ids (`<thread>#<first post>`) of the scenes naming it

    @property
    def names(self) -> tuple[str, str]:
        return (self.full, self.short)


@dataclass(frozen=True, slots=True)
class RecurringQuest:
    """A generated quest and its gold: the things it names, by order of first mention."""

    path: Path
    things: tuple[Thing, ...]
    scene_things: dict[str, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    # scene id -> (full name of the thing, the form used, the fact told), in text order

    def gold_yaml(self) -> str:
        """The gold list in `terrarium score`'s format (`terms:` of `{term, aliases}`)."""
        terms = [{"term": thing.full, "aliases": [thing.short]} for thing in self.things]
        return yaml.safe_dump({"terms": terms}, sort_keys=False, allow_unicode=True)

    def thing(self, name: str) -> Thing:
        """The thing with this full or short name (KeyError otherwise)."""
        for thing in self.things:
            if name in thing.names:
                return thing
        raise KeyError(name)


def _cast(seed: int, people: int, places: int) -> list[tuple[str, str, str]]:
    """(full, short, kind) for the cast; every full name and short form is distinct, and no
    short form is a word of another thing's name."""
    for scale in range(3, 21):  # the smallest vocabulary that has enough names and places
        vocab = vocabulary(seed, scale=scale)
        names = [name for name in vocab.names if len(name) <= 9 and not is_english_word(name)]
        if people * 2 <= len(names) and places <= len(vocab.places):
            break
    else:
        raise ValueError(f"too large a cast: {people} people and {places} places")
    rng = random.Random(f"recurring-cast:{seed}")
    rng.shuffle(names)
    cast: list[tuple[str, str, str]] = []
    for index in range(people):
        given, family = names[2 * index], names[2 * index + 1]
        cast.append((f"{given} {family}", given, "character"))
    for index, place in enumerate(vocab.places[:places]):
        modifier = _PLACE_MODIFIERS[index % len(_PLACE_MODIFIERS)]
        cast.append((f"{modifier} {place}", place, "place"))
    rng.shuffle(cast)
    return cast


def _facts(seed: int, count: int) -> list[str]:
    rng = random.Random(f"recurring-facts:{seed}")
    pool = [
        f"{v} {'an' if a[0] in 'aeiou' else 'a'} {a} {n}"
        for v in _VERBS
        for a in _ADJECTIVES
        for n in _NOUNS
    ]
    rng.shuffle(pool)
    if count > len(pool):
        raise ValueError(f"at most {len(pool)} facts")
    return pool[:count]


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def generate_recurring_quest(
    path: str | Path,
    *,
    threads: int = 3,
    scenes_per_thread: int = 12,
    people: int = 30,
    places: int = 14,
    new_per_scene: int = 2,
    mentions_per_scene: tuple[int, int] = (2, 4),
    seed: int = 0,
) -> RecurringQuest:
    """Write the quest to `path` (replaced if it exists) and return it with its gold."""
    if threads < 1 or scenes_per_thread < 1:
        raise ValueError("threads and scenes_per_thread must be at least 1")
    low, high = mentions_per_scene
    if not 0 <= low <= high:
        raise ValueError(f"mentions_per_scene must be (low, high) with 0 <= low <= high: {low}")
    cast = _cast(seed, people, places)
    facts = _facts(seed, len(cast) * FACTS_PER_THING)
    rng = random.Random(f"recurring-quest:{seed}")
    introduced: list[int] = []  # cast indexes, in order of first mention
    told: dict[int, list[str]] = {}
    scenes_of: dict[int, list[str]] = {}
    scene_things: dict[str, tuple[tuple[str, str, str], ...]] = {}
    # a few rare things: mentioned once or twice in the whole quest
    rare = {index for index in range(len(cast)) if rng.random() < 0.25}

    target = Path(path)
    with corpus_file(target, CORPUS_SCHEMA) as conn:
        post_id = FIRST_POST_ID
        time = FIRST_TIME
        for number in range(1, threads + 1):
            thread_id = post_id
            title = f"Recurring Quest #{number}"
            conn.execute("INSERT INTO thread (id, title) VALUES (?, ?)", (thread_id, title))
            for _ in range(scenes_per_thread):
                # who this scene names: new things first drawn, then recurring ones
                chosen: list[int] = []
                fresh = [i for i in range(len(cast)) if i not in told]
                for _ in range(min(new_per_scene, len(fresh))):
                    chosen.append(fresh.pop(0))
                recurring = [
                    i
                    for i in introduced
                    if i not in chosen and not (i in rare and len(scenes_of[i]) >= 2)
                ]
                weights = [1.0 / (1 + rank) ** 0.7 for rank in range(len(recurring))]
                want = rng.randint(low, high)
                while recurring and want > 0:
                    pick = rng.choices(range(len(recurring)), weights=weights, k=1)[0]
                    chosen.append(recurring.pop(pick))
                    weights.pop(pick)
                    want -= 1
                rng.shuffle(chosen)
                sentences: list[tuple[str, str, str]] = []
                for index in chosen:
                    full, short, _kind = cast[index]
                    first = index not in told
                    form = full if first or rng.random() < 0.4 else short
                    own = facts[index * FACTS_PER_THING : (index + 1) * FACTS_PER_THING]
                    seen = told.setdefault(index, [])
                    fact = own[len(seen)] if len(seen) < len(own) else rng.choice(own)
                    if fact not in seen:
                        seen.append(fact)
                    if first:
                        introduced.append(index)
                    sentences.append((full, form, fact))
                # the scene: one or two QM posts, the facts spread among filler
                posts = 1 if len(sentences) < 3 else 2
                bodies: list[list[str]] = [[] for _ in range(posts)]
                for position, (_full, form, fact) in enumerate(sentences):
                    bodies[position * posts // max(1, len(sentences))].append(f"{form} {fact}.")
                first_post = post_id
                for body in bodies:
                    paragraph: list[str] = []
                    for sentence in body:
                        paragraph.append(_sentence(rng.choice(_FILLER)))
                        paragraph.append(sentence)
                    paragraph.append(_sentence(rng.choice(_FILLER)))
                    tags = ["qm_post", "story_post"]
                    subject = None
                    if post_id == thread_id:
                        tags.append("op_post")
                        subject = title
                    conn.execute(
                        "INSERT INTO post VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            *(thread_id, post_id, QM_NAME, QM_TRIP, subject, time),
                            *(None, None, " ".join(paragraph)),
                        ),
                    )
                    conn.executemany(
                        "INSERT INTO tag (post_id, name) VALUES (?, ?)",
                        [(post_id, tag) for tag in tags],
                    )
                    post_id += 1
                    time += 60
                scene_id = f"{thread_id}#{first_post}"
                scene_things[scene_id] = tuple(sentences)
                for index in chosen:
                    scenes_of.setdefault(index, []).append(scene_id)
                # a player's reply ends the scene
                reply = rng.choice(_PLAYER_LINES)
                conn.execute(
                    "INSERT INTO post VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (thread_id, post_id, "Anonymous", None, None, time, None, None, reply),
                )
                post_id += 1
                time += 60
            time += 86_400
    things = tuple(
        Thing(
            cast[index][0],
            cast[index][1],
            cast[index][2],
            tuple(facts[index * FACTS_PER_THING : (index + 1) * FACTS_PER_THING]),
            tuple(told[index]),
            tuple(scenes_of[index]),
        )
        for index in introduced
    )
    return RecurringQuest(target, things, scene_things)
