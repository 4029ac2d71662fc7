"""`terrarium serve`: the reader's site, the exports and the source posts on loopback."""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import urlsplit

from terrarium_dagster.cli.arguments import add_command, add_corpus, add_store, settings_from_args
from terrarium_dagster.cli.common import EXIT_OK, bind_address, cannot_serve, file_path, signal_name
from terrarium_dagster.cli.site_refresher import SiteRefresher
from terrarium_dagster.errors import InputError
from terrarium_dagster.store.base import refuse_side_file


def add_serve_parser(commands: Any) -> None:
    """Add `serve`: the exports folder, the address and the port."""
    serve = add_command(
        commands,
        "serve",
        help="serve the reader's site, the exports and the source posts on loopback",
    )
    add_store(serve, site=True)
    add_corpus(serve)
    serve.add_argument(
        "--exports-dir", type=file_path, help="exports folder; default: `exports/` beside the store"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        type=bind_address,
        help="address to bind (default 127.0.0.1)",
    )
    serve.add_argument(
        "--port", type=int, help="port (default: site_url's, 8765 unless set; 0: any free)"
    )


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve until stopped: Ctrl-C, or SIGTERM as a container or systemd stops it, ends it the
    same way at any moment, with one line and exit 0 (a stop is how a server ends)."""
    try:
        return _serve(args)
    except KeyboardInterrupt as stop:
        print(f"stopped serving ({signal_name(stop)})", flush=True)
        return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from terrarium_dagster.corpus.story import is_book
    from terrarium_dagster.exports.files import claim_exports, exports_beside
    from terrarium_dagster.exports.serve import make_server

    settings = settings_from_args(args)
    if args.exports_dir is not None:  # a folder made at store.db-lease: the next run fails
        refuse_side_file(args.exports_dir, "--exports-dir", store=False)
    root = args.exports_dir or exports_beside(settings.db)
    site = SiteRefresher(settings, root)
    site.check_store()  # notes or a corpus as --db are named as such, not as another's exports
    claim_exports(root, settings.db, record=False)  # recorded once the site is written
    port = args.port if args.port is not None else (urlsplit(settings.site_url).port or 80)
    if not 0 <= port <= 65535:
        raise InputError(f"--port must be 0..65535, not {port}")
    with site.corpus() as corpus:
        try:
            server = make_server(root, args.host, port, corpus=corpus, refresh=site.refresh)
        except OSError as exc:
            remedy = "stop it, or give --port another port (0: any free one)"
            raise cannot_serve("", args.host, port, exc, remedy) from None
        site.say_not_yet()
        try:
            site.refresh()  # the reader's site, fresh from the store (again when it changes)
            claim_exports(root, settings.db)
            host, bound = server.server_address[:2]
            sources = "paragraphs" if is_book(corpus) else "posts"
            print(
                f"serving the reader's site, the exports ({root}) and the source {sources} at "
                f"http://{host}:{bound}/ (Ctrl-C stops)",
                flush=True,
            )
            server.serve_forever()
        finally:
            server.server_close()
            site.settle()  # a build a request began ends (its store closed) before the exit
    return EXIT_OK
