"""Where a post reference points — the one place a source link is built.

A source post links to the user's public post URL template when one is configured
(`url_template`, e.g. `https://example.org/voyage/{thread_id}#{post_id}`), and otherwise to the
post's own page on the site `terrarium serve` serves (`<site_url>/post/<post_id>`, with
`?q=<quote>` to highlight the quoted words). Every surface that shows a source — Dagster's
metadata, `terrarium lineage`, the wiki, the reader's site, the JSON/YAML exports — asks
`PostLinks.url` (through `Corpus.post_url`), so they all point at the same place.
"""

from __future__ import annotations

from urllib.parse import quote as url_quote
from urllib.parse import urlencode

POST_ROUTE_PREFIX = "/post/"


def post_path(post_id: int, quote: str | None = None) -> str:
    """The served post page's path: `/post/<post_id>`, `?q=<quote>` to highlight a quote."""
    path = f"{POST_ROUTE_PREFIX}{int(post_id)}"
    if quote and quote.strip():
        path += "?" + urlencode({"q": " ".join(quote.split())}, quote_via=url_quote)
    return path


class PostLinks:
    """Turns `(thread_id, post_id)` into a link: the public template, else the served page.

    `template`: the user's post URL template (validated by the corpus), or None.
    `site_url`: where `terrarium serve` answers (`Settings.site_url`), or None for no link at all.
    """

    def __init__(self, template: str | None, site_url: str | None) -> None:
        self.template = template
        self.site_url = site_url.rstrip("/") if site_url else None

    @property
    def local(self) -> bool:
        """True when links go to the served post pages (no public template configured)."""
        return self.template is None and self.site_url is not None

    def url(self, thread_id: int, post_id: int, quote: str | None = None) -> str | None:
        """The post's link; a quote is highlighted on the served page (a public template
        cannot carry it). None when there is neither a template nor a site."""
        if self.template is not None:
            return self.template.format(thread_id=thread_id, post_id=post_id)
        if self.site_url is None:
            return None
        return self.site_url + post_path(post_id, quote)

    def href(self, thread_id: int, post_id: int, quote: str | None = None) -> str | None:
        """The link for a page `terrarium serve` itself serves (the reader's site): the served
        post's path, relative to the server (right whatever port it listens on), else `url`."""
        if self.local:
            return post_path(post_id, quote)
        return self.url(thread_id, post_id, quote)


def site_entry_url(site_url: str, entry_id: int, *, upto: str | None = None) -> str:
    """An entry's page on the reader's site (`terrarium serve`), as of thread `upto` when given
    (the glossary as it stood at that thread's end), where its sources lead to the posts."""
    query = "?" + urlencode({"upto": upto}) if upto else ""
    return f"{site_url.rstrip('/')}/{query}#/entry/{int(entry_id)}"


def site_search_url(site_url: str, query: str = "", *, upto: str | None = None) -> str:
    """The reader's site's index with its search (`?q=`): any entry of any thread by name."""
    params = {key: value for key, value in (("upto", upto), ("q", query)) if value}
    return f"{site_url.rstrip('/')}/" + ("?" + urlencode(params) if params else "")
