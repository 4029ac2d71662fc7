"""`python -m terrarium_dagster.cli`: the `terrarium` command."""

import sys

from terrarium_dagster.launcher import main

sys.exit(main())
