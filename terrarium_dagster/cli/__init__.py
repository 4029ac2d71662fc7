"""The `terrarium` command.

Exit codes: 0 success, 1 runtime failure (the model server failed persistently, the context
cannot fit), 2 bad input (corpus, configuration, arguments), 130 interrupted (resume with the
same command).

One module per command (its options and what it does); `arguments` holds the parser's shared
pieces, `app` the parser, the table of commands and `main`; `progress_display` and
`site_refresher` serve `run`, and `serve` and `dev`.
"""

from __future__ import annotations

from terrarium_dagster.cli.app import COMMANDS, DESCRIPTION, EPILOG, build_parser, main
from terrarium_dagster.cli.common import EXIT_FAILURE, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_OK
from terrarium_dagster.cli.dev_command import cmd_dev
from terrarium_dagster.cli.edition_command import cmd_edition
from terrarium_dagster.cli.export_command import cmd_export
from terrarium_dagster.cli.import_command import cmd_import
from terrarium_dagster.cli.lineage_command import cmd_lineage
from terrarium_dagster.cli.progress_display import Progress
from terrarium_dagster.cli.recover_command import cmd_recover
from terrarium_dagster.cli.run_command import cmd_run
from terrarium_dagster.cli.score_command import cmd_score
from terrarium_dagster.cli.serve_command import cmd_serve
from terrarium_dagster.cli.site_refresher import SiteRefresher
from terrarium_dagster.cli.snapshot_commands import cmd_snapshots, cmd_why
from terrarium_dagster.cli.status_command import cmd_status
from terrarium_dagster.cli.undo_command import cmd_undo

__all__ = [
    "COMMANDS",
    "DESCRIPTION",
    "EPILOG",
    "EXIT_FAILURE",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "Progress",
    "SiteRefresher",
    "build_parser",
    "cmd_dev",
    "cmd_edition",
    "cmd_export",
    "cmd_import",
    "cmd_lineage",
    "cmd_recover",
    "cmd_run",
    "cmd_score",
    "cmd_serve",
    "cmd_snapshots",
    "cmd_status",
    "cmd_undo",
    "cmd_why",
    "main",
]
