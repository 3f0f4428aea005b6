"""A real PostgreSQL server for the tests and benches: Debian's binaries, a throwaway cluster.

`make test` installs Debian's ``postgresql`` package when it is absent. The cluster lives in a
temporary folder, listens on a free loopback port, trusts local connections, and is started as
a non-root user when the suite runs as root (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.browser_support import free_port

SUPERUSER = "foil"


def postgres_bin() -> Path:
    """The folder of initdb and pg_ctl (Debian keeps them out of PATH), or RuntimeError saying what to install."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    if shutil.which("initdb"):
        return Path(shutil.which("initdb")).parent
    raise RuntimeError(
        "PostgreSQL's initdb was not found: install it (sudo apt-get install postgresql) or run `make test`, "
        "which installs it"
    )


class PostgresServer:
    """One throwaway PostgreSQL cluster: ``start()``, ``url(database)``, ``create_database()``, ``stop()``."""

    def __init__(self, *, durable: bool = False, max_connections: int = 500) -> None:
        self.bin = postgres_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="foil-postgres-"))
        self.port = free_port()
        self.durable = durable  # benches keep fsync on, as a real server has it; tests do not need it
        self.max_connections = max_connections
        self._user = None
        self._databases = 0
        if os.geteuid() == 0:
            self._user = next(name for name in ("postgres", "nobody") if _has_user(name))
            os.chown(self.folder, pwd.getpwnam(self._user).pw_uid, pwd.getpwnam(self._user).pw_gid)

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", self._user, "--"] if self._user else []
        result = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120)
        if result.returncode:
            raise RuntimeError(f"{' '.join(command)} failed: {result.stdout}{result.stderr}")

    def start(self) -> PostgresServer:
        data = self.folder / "data"
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--locale=C",
            "--encoding=UTF8",
            "--no-sync",
        )
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c max_connections={self.max_connections}"
        )
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(self.folder / "server.log"),
            "-o",
            options,
            "-w",
            "start",
        )
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, template: str | None = None) -> str:
        """A new empty database (or a copy of `template`, which must have no open connection); its URL."""
        import psycopg

        self._databases += 1
        name = f"foil_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "immediate", "stop")
        finally:
            time.sleep(0.1)
            shutil.rmtree(self.folder, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
