"""Starting the app: the one Streamlit command line `foil serve`, `make run` and the browser tests use."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from foil_studio.data import paths

APP_SCRIPT = Path(__file__).resolve().parent / "app.py"
CONFIG = Path(__file__).resolve().parent / "streamlit_config.toml"


def config_flags(config: Path = CONFIG) -> list[str]:
    """The app's Streamlit settings as command-line flags (Streamlit reads `.streamlit/config.toml`
    only from the working directory, which an installed app does not control).

    >>> config_flags()
    ['--client.toolbarMode=minimal', '--server.fileWatcherType=none']
    """
    settings = tomllib.loads(config.read_text())
    return [f"--{section}.{key}={value}" for section, values in settings.items() for key, value in values.items()]


def streamlit_command(python: str, port: int, address: str | None = None) -> list[str]:
    """The command that serves the app on `port` (every interface unless `address` is given)."""
    command = [python, "-m", "streamlit", "run", str(APP_SCRIPT), "--server.headless=true"]
    command += ["--browser.gatherUsageStats=false", f"--server.port={port}", *config_flags()]
    return command + ([f"--server.address={address}"] if address else [])


def app_environment(db: str | Path) -> dict[str, str]:
    """The environment the app runs in: this one, with `$FOIL_DB` naming the store absolutely (the
    app does not depend on the folder it was started from)."""
    location = str(db) if paths.is_store_url(str(db)) else str(Path(db).resolve())
    return {**os.environ, "FOIL_DB": location}
