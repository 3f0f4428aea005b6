"""`foil serve` as a service manager runs it: a signal to the `foil` process alone (Docker,
Kubernetes and systemd stop a service with SIGTERM; Ctrl-C is SIGINT) stops the app and every
process it started, and the exit code says which signal it was."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.browser_support import free_port, wait_healthy
from tests.conftest import FOIL_CLI, REPO


def process_table() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group) of every live process (zombies left out), from /proc."""
    table = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended while the table was read
            continue
        if fields[0] != "Z":
            table[int(stat.parent.name)] = (int(fields[1]), int(fields[2]))
    return table


def descendants(pid: int) -> set[int]:
    """The processes `pid` started, and theirs."""
    table, found, frontier = process_table(), set(), {pid}
    while frontier:
        frontier = {child for child, (parent, _) in table.items() if parent in frontier} - found
        found |= frontier
    return found


def survivors(children: set[int], groups: set[int]) -> set[int]:
    """The live processes among `children` or in their process groups."""
    return {pid for pid, (_, group) in process_table().items() if pid in children or group in groups}


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_foil_serve_alone_stops_the_app_and_every_child(tmp_path, stop):
    port = free_port()
    with (tmp_path / "serve.log").open("w") as log:
        foil = subprocess.Popen(
            [*FOIL_CLI, "serve", "--port", str(port), "--db", str(tmp_path / "app.db")],
            cwd=REPO,
            env={**os.environ, "FOIL_ADMIN_TOKEN": "serve-test-admin-token"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a group apart from pytest's: what is left of foil's is seen below
            # as from a terminal: a suite started in the background (`make test &`) ignores SIGINT, and
            # its children inherit that, so foil would rightly keep ignoring Ctrl-C (nohup's rule)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    children: set[int] = set()
    try:
        wait_healthy(port, foil)
        children = descendants(foil.pid)
        groups = {group for pid, (_, group) in process_table().items() if pid in children}
        assert children, "the app runs in a process of its own"
        os.kill(foil.pid, stop)  # the foil process only, not its group: as `kill` and container runtimes do
        code = foil.wait(timeout=30)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (survivors(children, groups) or not port_is_free(port)):
            time.sleep(0.2)
        assert survivors(children, groups) == set(), "processes foil serve started outlived it"
        assert port_is_free(port)
        assert code == 128 + stop, (tmp_path / "serve.log").read_text()[-2000:]
    finally:
        for pid in children | {foil.pid}:
            if pid in process_table():
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("address", [None, "127.0.0.1"], ids=["every-interface", "loopback"])
def test_a_port_another_program_holds_is_refused_in_one_line_before_any_link(tmp_path, monkeypatch, capsys, address):
    """Issue 53: `foil serve` on a taken port printed the admin link (with its token) for that port,
    then failed. Now the port is tried first; a taken one is one line naming it, and no link."""
    from foil_studio import cli, server

    monkeypatch.setattr(server, "serve", lambda *a, **k: pytest.fail("the app was started on a taken port"))
    monkeypatch.setenv("FOIL_ADMIN_TOKEN", "serve-test-admin-token")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        where = ["--address", address] if address else []
        code = cli.main(["serve", "--port", str(port), *where, "--db", str(tmp_path / "app.db")])
    shown = capsys.readouterr()
    assert code == 1 and not shown.out, shown
    assert shown.err.count("\n") == 1 and f"port {port} is taken by another program" in shown.err, shown.err
    assert "token" not in shown.err and "Traceback" not in shown.err


def test_a_free_port_passes_the_check(tmp_path):
    from foil_studio import server

    server.check_port(free_port())
    server.check_port(free_port(), "127.0.0.1")


# --- `server.serve` in this process: the signal rules without Streamlit ----------------------------

SLEEPER = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "


def python(code: str) -> list[str]:
    import sys

    return [sys.executable, "-c", code]


def signal_soon(number: int, delay: float = 0.5) -> None:
    """Send `number` to this process from a thread after `delay` (the handler runs in the main thread)."""
    import threading

    threading.Timer(delay, os.kill, (os.getpid(), number)).start()


def group_of(app_pid: int) -> set[int]:
    return {pid for pid, (_, group) in process_table().items() if group == app_pid}


def group_ended(app_pid: int, within: float = 5.0) -> bool:
    """Whether the app's group is gone within `within` seconds: serve has signalled the whole group and
    waited for the app, but a grandchild killed in the same instant may still be exiting on a loaded
    machine (it failed once in a full suite with SIGHUP: signalled, not yet gone)."""
    deadline = time.monotonic() + within
    while group_of(app_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not group_of(app_pid)


def test_serve_returns_the_apps_own_exit_code_and_puts_the_handlers_back():
    from foil_studio import server

    before = {number: signal.getsignal(number) for number in server.STOP_SIGNALS}
    exits_with = "import os, sys; sys.exit(int(os.environ['FOIL_TEST_EXIT']))"  # the environment serve was given
    assert server.serve(python(exits_with), {**os.environ, "FOIL_TEST_EXIT": "3"}) == 3
    assert {number: signal.getsignal(number) for number in server.STOP_SIGNALS} == before


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_stop_signal_during_serve_ends_the_app_and_what_it_started_with_128_plus_its_number(monkeypatch, stop):
    from foil_studio import server

    started: list[int] = []
    popen = subprocess.Popen

    def recorded(*args, **kwargs):
        app = popen(*args, **kwargs)
        started.append(app.pid)
        return app

    monkeypatch.setattr(server.subprocess, "Popen", recorded)
    # as from a terminal: a suite started in the background ignores SIGINT, which serve rightly keeps
    previous = signal.signal(stop, signal.SIG_DFL)
    try:
        signal_soon(stop)
        code = server.serve(python(SLEEPER + "time.sleep(60)"), os.environ)
        assert signal.getsignal(stop) is signal.SIG_DFL, "serve did not put the handler back"
    finally:
        signal.signal(stop, previous)
    assert code == 128 + stop
    assert group_ended(started[0]), "the app's process group outlived serve"


def test_a_signal_ignored_when_serve_starts_stays_ignored():
    from foil_studio import server

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        signal_soon(signal.SIGHUP, 0.3)
        assert server.serve(python("import time; time.sleep(1.5)"), os.environ) == 0  # the app ran to its end
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_an_app_that_ignores_sigterm_is_killed_after_the_grace_time(monkeypatch):
    from foil_studio import server

    monkeypatch.setattr(server, "GRACE_SECONDS", 0.5)
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    with subprocess.Popen(python(stubborn), start_new_session=True, stdout=subprocess.PIPE) as app:
        assert app.stdout.readline().strip() == b"ready"
        started = time.monotonic()
        server.stop_group(app)
        assert app.returncode == -signal.SIGKILL
        assert 0.4 < time.monotonic() - started < 10


def test_the_command_and_environment_the_app_is_served_with(tmp_path, monkeypatch):
    import sys

    from foil_studio import server

    command = server.streamlit_command(sys.executable, 8765)
    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(server.APP_SCRIPT)]
    assert "--server.port=8765" in command and "--server.headless=true" in command
    assert "--browser.gatherUsageStats=false" in command  # no usage report leaves the machine
    assert not any(flag.startswith("--server.address") for flag in command)
    assert server.streamlit_command(sys.executable, 8765, "127.0.0.1")[-1] == "--server.address=127.0.0.1"
    monkeypatch.chdir(tmp_path)
    assert server.app_environment("app.db")["FOIL_DB"] == str(tmp_path / "app.db")
    url = "postgresql://foil@localhost/foil"
    environment = server.app_environment(url)
    assert environment["FOIL_DB"] == url and environment["PATH"] == os.environ["PATH"]


def test_an_address_this_machine_does_not_have_is_refused_naming_it():
    from foil_studio import server

    with pytest.raises(OSError, match=r"cannot serve on no-such-host\.invalid: not an address of this machine"):
        server.check_port(free_port(), "no-such-host.invalid")


@pytest.mark.parametrize(
    ("number", "said"),
    [
        (
            errno.EADDRINUSE,
            "port {port} is taken by another program ({where}); stop it, or serve on another port with --port N",
        ),
        (
            errno.EACCES,
            "port {port} needs privileges this user lacks ({where}); serve on a port from 1024 up with --port N",
        ),
        (errno.EADDRNOTAVAIL, "cannot serve on port {port} {where}: Cannot assign requested address"),
    ],
    ids=["taken", "privileged", "not-available"],
)
@pytest.mark.parametrize(("address", "where"), [(None, "on every interface"), ("127.0.0.1", "on 127.0.0.1")])
def test_each_reason_a_port_cannot_be_served_is_its_own_line(monkeypatch, number, said, address, where):
    """The probe binds as the app's server does (SO_REUSEADDR, then the address); each failure of
    the bind is said in one line naming the port and where, and what to do."""
    from foil_studio import server

    probes = []

    class Refusing(socket.socket):
        def bind(self, place):
            probes.append((self.family, self.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR), place))
            raise OSError(number, os.strerror(number))

    port = free_port()
    monkeypatch.setattr(server.socket, "socket", Refusing)
    with pytest.raises(OSError) as refused:
        server.check_port(port, address)
    assert str(refused.value) == said.format(port=port, where=where)
    assert probes and probes[0][0] == socket.AF_INET and probes[0][1] != 0  # SO_REUSEADDR set before the bind
    assert probes[0][2][1] == port


def test_an_ipv6_wildcard_this_machine_cannot_bind_is_left_to_the_app(monkeypatch):
    """An IPv6 address that will not bind (a machine without IPv6) is skipped, as the app's server
    skips it; IPv4 still decides."""
    from foil_studio import server

    class NoIpv6(socket.socket):
        def bind(self, place):
            if self.family == socket.AF_INET6:
                assert self.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) != 0
                raise OSError(errno.EADDRNOTAVAIL, os.strerror(errno.EADDRNOTAVAIL))
            return super().bind(place)

    port = free_port()
    monkeypatch.setattr(server.socket, "socket", NoIpv6)
    monkeypatch.setattr(
        server.socket,
        "getaddrinfo",
        lambda *a, **k: [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::", a[1], 0, 0)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("0.0.0.0", a[1])),
        ],
    )
    server.check_port(port)  # no error: IPv4 binds
