"""`python -m foil_studio.cli`: the `foil` command."""

from foil_studio.cli.main import run

run()
