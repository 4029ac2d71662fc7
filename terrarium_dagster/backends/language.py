"""Whether a corpus reads as English: the offline backend's word rules are English's (word
frequencies, titles, sentence shapes), so on another language it keeps ordinary words as
entries. A served model reads any language; the offline backend says so before a run."""

from __future__ import annotations

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.terms.english import ENGLISH_SHARE, english_share

SAMPLE_WORDS = 5000  # the words read from the story's start to judge its language


def english_share_of(corpus: Corpus) -> float:
    """The share of English's commonest words among the first `SAMPLE_WORDS` of the story."""
    texts: list[str] = []
    words = 0
    for thread in corpus.threads():
        for post in corpus.posts(thread.id):
            texts.append(post.text)
            words += len(post.text.split())
            if words >= SAMPLE_WORDS:
                return english_share(" ".join(texts))
    return english_share(" ".join(texts)) if texts else 1.0


def offline_language_note(corpus: Corpus) -> str | None:
    """One line for a corpus that does not read as English, or None."""
    share = english_share_of(corpus)
    if share >= ENGLISH_SHARE:
        return None
    return (
        f"this story does not read as English ({share:.0%} of its words are English's commonest, "
        "about 40% in English prose): the offline backend's word rules are English's and will "
        "keep ordinary words as entries; a model served by vLLM (--agent-url) reads any language"
    )
