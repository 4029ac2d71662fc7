"""What the edition's checks find (the Dagster asset's checks call these; no Dagster here).

- `citation_problems`: a `>>post` in an entry's edition as of a thread that is not a post of the
  corpus in that thread or an earlier one.
- `later_problems`: a name the reader meets only after the thread (an entry's term or alias the
  glossary as of the thread does not have) in an entry's edition as of the thread, unless the
  posts its request showed, or the working definitions it stood on, hold it too.
"""

from __future__ import annotations

from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.units import Thread
from terrarium_dagster.edition.evidence import ThreadGlossary, later_names, unshown
from terrarium_dagster.edition.rewrite_prompt import CITATION, NameMatcher, later_terms
from terrarium_dagster.exports.references import find_references
from terrarium_dagster.store.annotator import GlossaryStore

MAX_LISTED = 20


def citation_problems(store: GlossaryStore, corpus: Corpus, thread: Thread) -> list[str]:
    """Citations of the edition as of `thread` that do not resolve to a post at or before it."""
    problems: list[str] = []
    position_of = {t.id: t.position for t in corpus.threads()}
    for entry_id, text in sorted(store.editions.as_of(thread.position).items()):
        for post_id in sorted({int(n) for n in CITATION.findall(text.text)}):
            post = corpus.post(post_id)
            if post is None:
                problems.append(f"E{entry_id} cites >>{post_id}, which is no post of the corpus")
            elif position_of.get(post.thread_id, thread.position + 1) > thread.position:
                problems.append(f"E{entry_id} cites >>{post_id}, a post of a later thread")
    return problems


def later_problems(store: GlossaryStore, corpus: Corpus, thread: Thread) -> list[str]:
    """Names of later threads in the edition as of `thread` (see the module docstring)."""
    state = store.progress.thread_state(thread.id)
    if state is None or state.end_revision_id is None:
        return []
    known = ThreadGlossary.read(store, thread, state.end_revision_id)
    names = NameMatcher(later_names(store, known))
    if not names.keys:
        return []
    problems: list[str] = []
    for entry_id, text in sorted(store.editions.as_of(thread.position).items()):
        held = later_terms(text.text, names)
        if not held:
            continue
        shown = [post.text for p in text.posts if (post := corpus.post(p)) is not None]
        view = known.views.get(entry_id)
        if view is not None:
            shown.append(view.definition)
        for reference in find_references(text.text):
            target = known.index.resolve(reference.target)
            if target is not None:
                shown.append(known.views[target].definition)
        problems += [
            f"E{entry_id} names {name}, met only after {thread.key}"
            for name in unshown(held, " ".join(shown)).names()
        ]
    return problems
