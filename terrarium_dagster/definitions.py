"""The code location: everything under `defs/`, loaded the `dg` way.

`defs` serves the story the settings name (`terrarium.yaml` in the working folder, the
`TERRARIUM_*` variables). `story_definitions` serves one story of several on one deployment:
a story's folder holds its `terrarium.yaml` (with `story: NAME`) and a two-line location file
that calls it (deploy/stories/); one workspace names each story's file as a code location.
"""

import logging
import os
from pathlib import Path

import dagster as dg

from terrarium_dagster.config import CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


def story_definitions(location_file: str | Path) -> dg.Definitions:
    """The code location of the story whose `terrarium.yaml` lies beside `location_file`.

    The file becomes this process's settings (`TERRARIUM_CONFIG`) before the definitions load,
    so the location (its code server, its runs, its sensors: each is a process that loads this
    file) reads the story's corpus, store, exports and name from it.
    """
    config = Path(location_file).resolve().with_name(DEFAULT_CONFIG_FILE)
    os.environ[CONFIG_FILE_ENV] = str(config)
    components = logging.getLogger("dagster.components.core.component_tree")
    if not any(isinstance(kept, _StoryLocationName) for kept in components.filters):
        components.addFilter(_StoryLocationName())
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)


class _StoryLocationName(logging.Filter):
    """A story's code location is named after its story (`location_name` in the workspace),
    not after the project that holds the code (`[tool.dg.project] code_location_name`): by
    design they differ, and Dagster's warning that they do, at every load of every story's
    code server and sensor tick (64 lines a start), says nothing a user should act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "configured on this project does not match the name" not in record.getMessage()
