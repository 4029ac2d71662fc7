"""`terrarium dev`: the Dagster UI and the site server together."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, TextIO
from urllib.parse import urlsplit

from terrarium_dagster.cli.arguments import add_agent_command, settings_from_args
from terrarium_dagster.cli.common import EXIT_FAILURE, EXIT_OK, bind_address, cannot_serve
from terrarium_dagster.cli.site_refresher import SiteRefresher
from terrarium_dagster.config import Settings
from terrarium_dagster.errors import InputError


def add_dev_parser(commands: Any) -> None:
    """Add `dev`: the address and the Dagster UI's port."""
    dev = add_agent_command(
        commands,
        "dev",
        help="start the Dagster UI and `terrarium serve` together (one Ctrl-C stops both)",
        dagster=True,
    )
    dev.add_argument(
        "--host",
        default="127.0.0.1",
        type=bind_address,
        help="address to bind (default 127.0.0.1)",
    )
    dev.add_argument("--port", type=int, default=3000, help="the Dagster UI's port (default 3000)")


def cmd_dev(args: argparse.Namespace) -> int:
    """`dagster dev` (the UI, the daemon, the code location) as a child in its own process group,
    and the site server (`terrarium serve`: the reader's site, the exports, the post pages) in
    this process, on `site_url`'s port. Ctrl-C (or SIGTERM) stops both: the child's whole group
    gets SIGINT (Dagster's own orderly shutdown; again every 5 s, as Dagster can lose one while it
    sets up), then SIGKILL if it is still there after 30 s;
    what the child says once a stop was asked is dropped: the user reads one line."""
    import subprocess

    from terrarium_dagster.engine.opening import check_store_folder
    from terrarium_dagster.exports.files import claim_exports, exports_beside
    from terrarium_dagster.exports.serve import make_server

    settings = settings_from_args(args)
    if (
        args.db is not None
    ):  # a typed --db; TERRARIUM_DB and the config file are deployment settings
        check_store_folder(settings.db)  # before its exports folder is made beside it
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port must be 0..65535, not {args.port}")
    site_port = urlsplit(settings.site_url).port or 80
    if site_port == args.port:  # the site took it, and the UI went unserved under that address
        raise InputError(
            f"the reader's site (--site-url {settings.site_url}) and the Dagster UI (--port "
            f"{args.port}) cannot share port {site_port}: give one of them another port"
        )
    env = dict(os.environ)
    for name in Settings.model_fields:  # the child's code location reads the same settings
        value = getattr(args, name, None)
        if value is not None:
            env[f"TERRARIUM_{name.upper()}"] = str(int(value) if isinstance(value, bool) else value)
    # `dagster dev` is what `dg dev` runs; we start it ourselves (any folder, no dg project
    # needed) and so are told it is superseded: that one warning is not for our users.
    env["PYTHONWARNINGS"] = ",".join(
        filter(None, (env.get("PYTHONWARNINGS"), f"ignore:{_SUPERSEDED}::"))
    )
    if "DAGSTER_HOME" not in env and Path("dagster.yaml").is_file():
        env["DAGSTER_HOME"] = str(Path.cwd())  # a checkout: run history persists in it
    root = exports_beside(settings.db)
    site = SiteRefresher(settings, root)
    site.check_store()  # notes or a corpus as --db are named as such, not as another's exports
    claim_exports(root, settings.db, record=False)  # recorded once the site is written
    stop = StopRequest()

    with site.corpus() as corpus:
        _ui_port_free(args.host, args.port)
        recorded = _recorded_corpus(settings, corpus.path)
        if recorded is not None:  # the code location's partitions come from the store's corpus
            env["TERRARIUM_CORPUS"] = recorded
        try:
            server = make_server(root, args.host, site_port, corpus=corpus, refresh=site.refresh)
        except OSError as exc:
            remedy = (
                f"stop it, or give this one --site-url http://{args.host}:PORT (and --port for "
                "the UI's)"
            )
            raise cannot_serve("the reader's site ", args.host, site_port, exc, remedy) from None
        site.say_not_yet()
        serving = threading.Thread(target=server.serve_forever, name="site", daemon=True)
        serving.start()
        site.refresh()
        claim_exports(root, settings.db)
        workspace = _dev_workspace()
        command = [sys.executable, "-m", "dagster", "dev", "-w", str(workspace)]
        command += ["-h", args.host, "-p", str(args.port)]
        previous = {
            sig: signal.signal(sig, stop.request) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        unsafe = instance_pool_problem(env.get("DAGSTER_HOME"))
        if unsafe is not None:  # said once nothing refused the start: the UI works, not queues
            print(f"terrarium: {unsafe}", file=sys.stderr, flush=True)
        # its output comes through this process (`_relay`): what it says once a stop was asked
        # (a KeyboardInterrupt's traceback when it is stopped while it imports, its shutdown
        # notes) is not for the user, who is told in one line that the UI stopped
        env["PYTHONUNBUFFERED"] = "1"  # its lines as it writes them, not a pipe's blocks
        child = subprocess.Popen(
            command,
            env=env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        relays = [_relay(child.stdout, sys.stdout, stop), _relay(child.stderr, sys.stderr, stop)]
        print(
            f"Dagster UI: http://{args.host}:{args.port}/ · the reader's site, the exports and "
            f"the source posts: {settings.site_url}/ (Ctrl-C stops both)",
            flush=True,
        )
        if not settings.offline and not settings.agent_url:  # said now, not at the first run
            print(
                "terrarium: no model server configured: an annotation will fail until this is "
                "started again with --agent-url URL (TERRARIUM_AGENT_URL) or --offline",
                file=sys.stderr,
                flush=True,
            )
        try:
            while child.poll() is None and not stop.wait(0.5):
                pass
        finally:
            _stop_group(child)
            for relay in relays:  # what it said before it stopped is out before our last line
                relay.join(timeout=5)
            server.shutdown()
            server.server_close()
            shutil.rmtree(workspace.parent, ignore_errors=True)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if stop.is_set():  # a stop is how `dev` ends, as `serve`: one line, exit 0
        print(f"stopped the Dagster UI and the reader's site ({stop.signal_name})", flush=True)
        return EXIT_OK
    print(f"terrarium: dagster dev exited with code {child.returncode}", file=sys.stderr)
    return EXIT_FAILURE


class StopRequest(threading.Event):
    """Set by Ctrl-C or SIGTERM (`request`, the handler `dev` installs while it runs): the loop
    waiting on `dagster dev` ends, and `dev` says which signal stopped it."""

    def __init__(self) -> None:
        super().__init__()
        self.signal_name = ""

    def request(self, signum: int, frame: object) -> None:
        self.signal_name = self.signal_name or signal.Signals(signum).name
        self.set()


def _relay(source: IO[bytes] | None, target: TextIO, stop: threading.Event) -> threading.Thread:
    """Copy `dagster dev`'s output, line by line, to `target` until a stop was asked; from then
    on it is read and dropped (the child must never block on a full pipe)."""

    def copy() -> None:
        if source is None:
            return
        with source:
            for line in iter(source.readline, b""):
                if stop.is_set():
                    continue
                with contextlib.suppress(OSError, ValueError):  # our stream closed meanwhile
                    target.write(line.decode("utf-8", "replace"))
                    target.flush()

    relay = threading.Thread(target=copy, name="dagster-dev-output", daemon=True)
    relay.start()
    return relay


def _ui_port_free(host: str, port: int) -> None:
    """Refuse in one line, before anything starts, a UI port another program listens on:
    `dagster dev` would say so and go on running its daemon with no UI at all."""
    import socket

    if port == 0:
        return
    probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the UI's server binds
        probe.bind((host, port))
    except OSError as exc:
        remedy = "stop it, or give this one --port PORT"
        raise cannot_serve("the Dagster UI ", host, port, exc, remedy) from None
    finally:
        probe.close()


def instance_pool_problem(home: str | None) -> str | None:
    """What is wrong, for a story's runs, with the Dagster instance `dagster dev` will use
    (`DAGSTER_HOME`; None: a temporary one). Without a pool limit taken per step
    (`concurrency: pools: default_limit: 1, granularity: op`, as the checkout's dagster.yaml
    sets), two runs of one story (two backfills, a backfill and the schedule) start together and
    the later one fails on the store's writer lease instead of waiting in Dagster's queue. None
    when the instance sets it."""
    import yaml

    clash = "its pools have no limit, so a second run of one story fails on the writer lease"
    if home is None:
        return (
            "no DAGSTER_HOME and no dagster.yaml here: Dagster keeps this session's runs in a "
            f"temporary folder, and {clash}; run this from the checkout or set DAGSTER_HOME"
        )
    config = Path(home).expanduser() / "dagster.yaml"
    wanted = f"add `concurrency: pools: {{default_limit: 1, granularity: op}}` to {config}"
    try:
        loaded = yaml.safe_load(config.read_text(encoding="utf-8")) if config.is_file() else None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return f"{config} cannot be read ({type(exc).__name__}), so {clash}: {wanted}"
    concurrency = loaded.get("concurrency") if isinstance(loaded, dict) else None
    pools = concurrency.get("pools") if isinstance(concurrency, dict) else None
    limit = pools.get("default_limit") if isinstance(pools, dict) else None
    granularity = pools.get("granularity") if isinstance(pools, dict) else None
    if isinstance(limit, int) and limit >= 1 and granularity == "op":
        return None
    return f"DAGSTER_HOME {home}: {clash}: {wanted}"


def _recorded_corpus(settings: Settings, opened: Path) -> str | None:
    """The corpus to hand the code location when none is named and the store exists: the one
    the store was built from (opened by the site server), so a store built from an imported
    book shows that book's chapters as partitions, not the bundled sample's threads."""
    if settings.corpus is not None or not Path(settings.db).expanduser().is_file():
        return None
    return str(opened)


_SUPERSEDED = "Function `dev_command` is superseded"  # dagster's SupersessionWarning
# The code location as the project names it ([tool.dg.project] code_location_name): loaded by
# module name alone, Dagster would name it after the module and warn, on every load, that the
# names differ.
_DEV_WORKSPACE = """load_from:
  - python_module:
      module_name: terrarium_dagster.definitions
      location_name: terrarium_dagster
"""


def _dev_workspace() -> Path:
    """A workspace file for `dagster dev` (in a private temporary folder the caller removes)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="terrarium-dev-"))
    workspace = folder / "workspace.yaml"
    workspace.write_text(_DEV_WORKSPACE, encoding="utf-8")
    return workspace


def _stop_group(child: Any, grace_s: float = 30.0, again_s: float = 5.0) -> None:
    """SIGINT to the child's process group, again every `again_s` while the child runs, then
    SIGKILL to whatever is left after `grace_s`. Again, because `dagster dev` loses a SIGINT
    that comes while it sets up a new instance's storage (it holds interrupts there and goes on
    to start the UI): a stop in a new DAGSTER_HOME's first seconds waited the whole grace."""
    import subprocess

    group = child.pid  # start_new_session: the group's id is the child's pid
    deadline = time.monotonic() + grace_s
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGINT)
        left = deadline - time.monotonic()
        try:
            child.wait(timeout=max(0.0, min(again_s, left)))
            break
        except subprocess.TimeoutExpired:
            if left <= again_s:
                break
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    if child.poll() is None:
        child.wait(timeout=10)
