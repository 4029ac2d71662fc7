"""`terrarium serve`: the reader's site and the exports over http on loopback.

`/` is the reader's site (`<exports>/site/`, built by `terrarium serve` from the store before it
starts serving); `/exports/` lists the exported threads in story order, and
`/exports/<thread key>/...` serves that thread's export folder (JSON, YAML, the lorebook, the
wiki); `/post/<post_id>` is a source post's page (`post_page`, `?q=<quote>` highlights the quote),
where every source link points unless a public post URL template is configured. Nothing else under
the store's folder is reachable (the store itself is never served). Bound to 127.0.0.1 unless told
otherwise. `refresh`, when given, is called before the site is served (it rebuilds the site when
the store changed since, so a page reloaded during a run shows what the run wrote).
"""

from __future__ import annotations

import html
import io
import os
import posixpath
import sys
import threading
from collections.abc import Callable
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from terrarium_dagster.corpus.quote_links import POST_ROUTE_PREFIX
from terrarium_dagster.corpus.reader import Corpus
from terrarium_dagster.corpus.story import chapter_title, is_book
from terrarium_dagster.corpus.units import parse_thread_key
from terrarium_dagster.errors import TerrariumError
from terrarium_dagster.exports.post_page import render_post_page

EXPORTS_PREFIX = "/exports/"
SITE_DIR = "site"
WIKI_INDEXES = ("wiki/html/index.html", "wiki/index.html", "wiki/index.md")


def _page(title: str, content: str) -> bytes:
    """A small HTML page of the server's own (a folder's listing, the exports' index)."""
    return (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{title}</title>{content}</html>"
    ).encode()


class ExportsHandler(SimpleHTTPRequestHandler):
    """The site at `/`, the exports folder under `/exports/` (with a generated index)."""

    def __init__(
        self,
        *args: object,
        exports_root: Path,
        posts: PostSource | None = None,
        refresh: Callable[[], None] | None = None,
        **kwargs: object,
    ) -> None:
        self.exports_root = exports_root
        self.posts = posts
        self.refresh = refresh
        super().__init__(*args, directory=str(exports_root), **kwargs)  # type: ignore[arg-type]

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.startswith(POST_ROUTE_PREFIX):
            self._send_post(path[len(POST_ROUTE_PREFIX) :])
            return
        if path == "/favicon.ico":  # no icon: say so without an error in the browser's console
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()
            return
        if any(part.startswith(".") for part in unquote(path).split("/")):
            # hidden files (the exports' owner, a manifest) and ".." are never served
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        if self.refresh is not None and not path.startswith(EXPORTS_PREFIX):
            self.refresh()
        if path == EXPORTS_PREFIX or (path == "/" and not self._site().is_dir()):
            self._send_index()
            return
        if path == EXPORTS_PREFIX.rstrip("/"):
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)
            self.send_header("Location", EXPORTS_PREFIX)
            self.end_headers()
            return
        super().do_GET()

    def _site(self) -> Path:
        return self.exports_root / SITE_DIR

    def translate_path(self, path: str) -> str:
        """`/exports/<rest>` → `<exports root>/<rest>`; anything else → the site's files; never
        outside those folders."""
        route = unquote(urlsplit(path).path)
        if route.startswith(EXPORTS_PREFIX):
            root, rest = self.exports_root, route[len(EXPORTS_PREFIX) :]
        else:
            root, rest = self._site(), route.lstrip("/")
        parts = [
            part for part in posixpath.normpath(rest).split("/") if part not in ("", ".", "..")
        ]
        if root == self.exports_root and parts and parts[0] == SITE_DIR:
            root, parts = self._site(), parts[1:]  # the site is served at /, once
        return str(root.joinpath(*parts))

    def list_directory(self, path: str | os.PathLike[str]) -> io.BytesIO | None:
        """A folder of the exports, listed without its hidden files (never served: listing them
        gave every thread's folder page a link that answered 404)."""
        folder = Path(path)
        try:
            children = sorted(
                (child for child in folder.iterdir() if not child.name.startswith(".")),
                key=lambda child: child.name,
            )
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "no such folder")
            return None
        shown = html.escape(unquote(urlsplit(self.path).path))
        items = "".join(
            f'<li><a href="{quote(child.name)}{"/" if child.is_dir() else ""}">'
            f"{html.escape(child.name)}{'/' if child.is_dir() else ''}</a></li>"
            for child in children
        )
        body = _page(shown, f"<h1>{shown}</h1><ul>{items or '<li>Empty.</li>'}</ul>")
        self._send_head(body)
        return io.BytesIO(body)

    def _send_index(self) -> None:
        folders = (
            sorted(
                child
                for child in self.exports_root.iterdir()
                if child.is_dir() and not child.name.startswith(".") and child.name != SITE_DIR
            )
            if self.exports_root.is_dir()
            else []
        )
        items = []
        for folder in folders:
            link = f"{EXPORTS_PREFIX}{quote(folder.name)}/"
            wiki = next((name for name in WIKI_INDEXES if (folder / name).is_file()), None)
            wiki_link = f' — <a href="{link}{wiki}">wiki</a>' if wiki else ""
            name = self.posts.chapter_name(folder.name) if self.posts is not None else None
            label = f"{name} ({folder.name})" if name else folder.name
            items.append(f'<li><a href="{link}">{html.escape(label)}</a>{wiki_link}</li>')
        unit = "chapter" if self.posts is not None and self.posts.book else "thread"
        site = (  # served at "/" once built; this page stands there until then
            '<a href="/">The reader’s site</a>.'
            if self._site().is_dir()
            else f"The reader’s site opens here once a {unit} is annotated."
        )
        body = _page(
            "terrarium exports",
            "<h1>Glossary exports</h1>"
            f"<p>The glossary as of the end of each {unit} (nothing from later {unit}s). "
            f"{site}</p>"
            f"<ul>{''.join(items) or '<li>No export yet.</li>'}</ul>",
        )
        self._send_head(body)
        self.wfile.write(body)

    def _send_head(self, body: bytes) -> None:
        """The status and headers of an HTML page of ours (`_page`)."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()

    def _send_post(self, rest: str) -> None:
        query = parse_qs(urlsplit(self.path).query)
        quote_text = (query.get("q") or [None])[0]
        page = None
        if rest.isascii() and rest.isdigit() and self.posts is not None:
            page = self.posts.page(int(rest), quote_text)
        if page is None:
            what = "no corpus to read posts from" if self.posts is None else f"no post {rest!r}"
            self.send_error(HTTPStatus.NOT_FOUND, what)
            return
        self._send_html(page)

    def _send_html(self, page: str) -> None:
        body = page.encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # quiet: a reader's browser is not an event worth a line


class PostSource:
    """The corpus the post pages come from, shared by the server's threads (one at a time)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.book = is_book(corpus)  # an imported book: its threads are chapters
        self._lock = threading.Lock()

    def page(self, post_id: int, quote_text: str | None = None) -> str | None:
        with self._lock:
            return render_post_page(self.corpus, post_id, quote_text)

    def chapter_name(self, thread_key: str) -> str | None:
        """A book's chapter as its reader knows it ("Chapter 24"), for the export folder of that
        thread key (`t00027-772`); None in a quest or for a folder that is no thread's."""
        if not self.book:
            return None
        try:
            _position, thread_id = parse_thread_key(thread_key)
            with self._lock:
                return chapter_title(self.corpus.thread(thread_id).title)
        except TerrariumError:
            return None


class _Server(ThreadingHTTPServer):
    """A reader who leaves before a page is sent (a browser that navigated on, a client's
    timeout) is no error: the server's stderr had a traceback for each such request."""

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # a broken pipe, a reset
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


def make_server(
    exports_root: Path,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    corpus: Corpus | None = None,
    refresh: Callable[[], None] | None = None,
) -> ThreadingHTTPServer:
    """A server for `exports_root` (not started); port 0 picks a free one. With `corpus`, it
    serves the source posts' pages at `/post/<post_id>`."""
    handler = partial(
        ExportsHandler,
        exports_root=Path(exports_root),
        posts=PostSource(corpus) if corpus is not None else None,
        refresh=refresh,
    )
    return _Server((host, port), handler)
