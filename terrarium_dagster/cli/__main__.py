"""`python -m terrarium_dagster.cli`: the `terrarium` command."""

import sys

from terrarium_dagster.cli.app import main

sys.exit(main())
