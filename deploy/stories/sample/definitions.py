"""This story's code location: its settings are the terrarium.yaml beside this file."""

import dagster as dg

from terrarium_dagster.definitions import story_definitions


@dg.definitions
def defs() -> dg.Definitions:
    return story_definitions(__file__)
