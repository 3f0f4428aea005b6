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
import uuid
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


class SharedPostgres:
    """A server that outlives the test session, named by ``FOIL_TEST_POSTGRES`` (a superuser URL).

    `make mutation` starts one for all its mutants: a cluster per mutant would cost more than its
    tests. Databases get unique names (many sessions share the server) and are dropped by ``stop()``.
    """

    def __init__(self, url: str) -> None:
        self.base = url.rsplit("/", 1)[0]
        self._created: list[str] = []

    def url(self, database: str = "postgres") -> str:
        return f"{self.base}/{database}"

    def create_database(self, template: str | None = None) -> str:
        """As `PostgresServer.create_database`, under a name no other session uses."""
        import psycopg

        name = f"foil_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
        self._created.append(name)
        return self.url(name)

    def stop(self) -> None:
        """Drop this session's databases; the server keeps running."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            for name in reversed(self._created):
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def session_server():
    """The tests' server: the shared one named by ``FOIL_TEST_POSTGRES``, else a new cluster."""
    shared = os.environ.get("FOIL_TEST_POSTGRES")
    return SharedPostgres(shared) if shared else PostgresServer().start()


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
