"""`terrarium serve`: the reader's site and the exports over http on loopback.

`/` is the reader's site (`<exports>/site/`, built by `terrarium serve` from the store before it
starts serving); `/exports/` lists the exported threads in story order, and
`/exports/<thread key>/...` serves that thread's export folder (JSON, YAML, the lorebook, the
wiki). Nothing else under the store's folder is reachable (the store itself is never served).
Bound to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import html
import posixpath
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

EXPORTS_PREFIX = "/exports/"
SITE_DIR = "site"
WIKI_INDEXES = ("wiki/html/index.html", "wiki/index.html", "wiki/index.md")


class ExportsHandler(SimpleHTTPRequestHandler):
    """The site at `/`, the exports folder under `/exports/` (with a generated index)."""

    def __init__(self, *args: object, exports_root: Path, **kwargs: object) -> None:
        self.exports_root = exports_root
        super().__init__(*args, directory=str(exports_root), **kwargs)  # type: ignore[arg-type]

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
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

    def _send_index(self) -> None:
        folders = (
            sorted(
                child
                for child in self.exports_root.iterdir()
                if child.is_dir() and not child.name.startswith(".")
            )
            if self.exports_root.is_dir()
            else []
        )
        items = []
        for folder in folders:
            link = f"{EXPORTS_PREFIX}{quote(folder.name)}/"
            wiki = next((name for name in WIKI_INDEXES if (folder / name).is_file()), None)
            wiki_link = f' — <a href="{link}{wiki}">wiki</a>' if wiki else ""
            items.append(f'<li><a href="{link}">{html.escape(folder.name)}</a>{wiki_link}</li>')
        body = (
            "<!doctype html><html lang=en><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            "<title>terrarium exports</title><h1>Glossary exports</h1>"
            "<p>The glossary as of the end of each thread (nothing from later threads). "
            '<a href="/">The reader’s site</a>.</p>'
            f"<ul>{''.join(items) or '<li>No export yet.</li>'}</ul></html>"
        ).encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # quiet: a reader's browser is not an event worth a line


def make_server(
    exports_root: Path, host: str = "127.0.0.1", port: int = 8765
) -> ThreadingHTTPServer:
    """A server for `exports_root` (not started); port 0 picks a free one."""
    handler = partial(ExportsHandler, exports_root=Path(exports_root))
    return ThreadingHTTPServer((host, port), handler)
