"""Starting the app: the one Streamlit command line `foil serve`, `make run` and the browser tests use,
and `serve`, which runs it until it exits or `foil serve` is asked to stop."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from foil_studio.data import paths

APP_SCRIPT = Path(__file__).resolve().parent / "app.py"
CONFIG = Path(__file__).resolve().parent / "streamlit_config.toml"


def config_flags(config: Path = CONFIG) -> list[str]:
    """The app's Streamlit settings as command-line flags (Streamlit reads `.streamlit/config.toml`
    only from the working directory, which an installed app does not control).

    >>> config_flags()
    ['--client.toolbarMode=minimal', '--runner.postScriptGC=false', '--server.fileWatcherType=none']
    """
    return [f"--{name}={_flag_value(value)}" for name, value in _settings(config)]


def use_app_settings(config: Path = CONFIG) -> None:
    """Give this process's Streamlit the app's settings, as `foil serve` gives them on its command
    line: AppTest (the tests, the scale bench) then runs the pages as the server does."""
    from streamlit import config as streamlit_config

    for name, value in _settings(config):
        streamlit_config.set_option(name, value)


def _settings(config: Path) -> list[tuple[str, object]]:
    """("section.key", value) of each setting in the app's Streamlit config file."""
    sections = tomllib.loads(config.read_text())
    return [(f"{section}.{key}", value) for section, values in sections.items() for key, value in values.items()]


def _flag_value(value: object) -> str:
    """A setting as Streamlit's command line spells it (booleans in lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


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


def check_port(port: int, address: str | None = None) -> None:
    """Refuse, in one line naming the port, a port the app could not listen on (another program holds
    it, or it needs privileges), before anything links to it: a socket bound there the way the app's
    server binds (SO_REUSEADDR, each address of `address`, else of every interface) and let go.
    An IPv6 wildcard this machine lacks is left to the app, as its server skips it."""
    where = f"on {address}" if address else "on every interface"
    try:
        found = socket.getaddrinfo(address or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise OSError(f"cannot serve on {address}: not an address of this machine ({error.strerror})") from None
    for family, socket_type, protocol, place in dict.fromkeys((f, t, p, a) for f, t, p, _, a in found):
        try:
            probe = socket.socket(family, socket_type, protocol)
        except OSError:  # an address family this machine does not have
            continue
        with probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(place)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    raise OSError(
                        f"port {port} is taken by another program ({where}); stop it, or serve on another port "
                        "with --port N"
                    ) from None
                if error.errno == errno.EACCES:
                    raise OSError(
                        f"port {port} needs privileges this user lacks ({where}); serve on a port from 1024 up "
                        "with --port N"
                    ) from None
                if family != socket.AF_INET6:
                    raise OSError(f"cannot serve on port {port} {where}: {error.strerror}") from None


# What Docker, Kubernetes and systemd stop a service with (SIGTERM), Ctrl-C, and a closed terminal.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_SECONDS = 10  # the app's time to shut down before its process group is killed
POLL_SECONDS = 0.2


def serve(command: Sequence[str], env: Mapping[str, str]) -> int:
    """Run the app (`command`) until it exits, or until this process gets one of STOP_SIGNALS; then
    stop the app and every process it started. Return the app's exit code, or 128 + the signal's
    number (the shell's convention: 143 for SIGTERM, 130 for Ctrl-C).

    The app runs in a process group of its own, so that a signal sent to this process alone (as
    `kill` and container runtimes send it) still reaches all of it. The signals are caught before
    the app starts and only noted by the handler, so none is lost while it starts. A signal this
    process ignores (SIGHUP under `nohup`) stays ignored.
    """
    received: list[int] = []
    watched = [number for number in STOP_SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.signal(number, lambda got, _frame: received.append(got)) for number in watched}
    try:
        with subprocess.Popen(command, env=env, start_new_session=True) as app:
            while app.poll() is None and not received:
                time.sleep(POLL_SECONDS)
            stop_group(app)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 128 + received[0] if received else app.returncode


def stop_group(app: subprocess.Popen) -> None:
    """SIGTERM to the app's process group; after the app's exit (or GRACE_SECONDS), SIGKILL to
    whatever of the group is left."""
    _signal_group(app.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        app.wait(timeout=GRACE_SECONDS)
    _signal_group(app.pid, signal.SIGKILL)
    app.wait()


def _signal_group(group: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is gone: nothing is left of it
        os.killpg(group, number)
