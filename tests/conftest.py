"""Shared fixtures: hypothesis profiles, a throwaway PostgreSQL 15 cluster, a private data dir."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

PG_BIN = Path("/usr/lib/postgresql/15/bin")
UNDER_CI = os.environ.get("CI", "").lower() == "true"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(cmd: str) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:
        return subprocess.run(
            ["su", "postgres", "-s", "/bin/sh", "-c", cmd], capture_output=True, text=True, check=False
        )
    return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, check=False)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL 15 cluster on 127.0.0.1 for this test session (skips locally if not installed)."""
    missing = None
    if not (PG_BIN / "initdb").exists() or not (PG_BIN / "pg_ctl").exists():
        missing = f"PostgreSQL 15 binaries are not in {PG_BIN} (apt-get install postgresql-15)"
    elif os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            missing = "running as root but there is no 'postgres' OS user to run initdb as"
    if missing is not None:
        if UNDER_CI:
            pytest.fail(f"{missing}; CI must run the PostgreSQL tests")
        pytest.skip(missing)
    root = Path(tempfile.mkdtemp(prefix="companysim-pg-"))
    os.chmod(root, 0o777)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    port = _free_port()
    data, log = root / "data", root / "log"
    init = _as_postgres(f"{PG_BIN}/initdb -D {data} -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8")
    if init.returncode != 0:
        init = _as_postgres(f"{PG_BIN}/initdb -D {data} -A trust -U postgres --no-sync -E UTF8 --locale=C")
    assert init.returncode == 0, init.stderr
    opts = (
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
        "-c full_page_writes=off -c synchronous_commit=off"
    )
    start = _as_postgres(f"{PG_BIN}/pg_ctl -D {data} -l {log} -w -o '{opts}' start")
    assert start.returncode == 0, start.stderr + (log.read_text() if log.exists() else "")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        _as_postgres(f"{PG_BIN}/pg_ctl -D {data} -m immediate -w stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def tmp_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private COMPANYSIM_DATA_DIR for one test."""
    d = tmp_path / "data"
    monkeypatch.setenv("COMPANYSIM_DATA_DIR", str(d))
    return d


_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER:
    # `make test` runs the suite on two xdist workers. Each gets a TMPDIR of its own, so the checks that nothing
    # was left behind (here and in tests that compare $TMPDIR before and after) see only their own worker's
    # files. Named after the controlling process (the worker's parent), which removes it once the workers have
    # exited: multiprocessing's own temporary directory inside it is removed only at the worker's exit. Short,
    # because Ray's unix sockets (tests/sim/rollouts/test_ray.py) must stay within the 108-byte path limit.
    _OWN_TMP = Path(tempfile.gettempdir()) / f"cs{_WORKER}-{os.getppid()}"
    _OWN_TMP.mkdir(exist_ok=True)  # a worker that replaces a crashed one takes it over
    os.environ["TMPDIR"] = str(_OWN_TMP)
    tempfile.tempdir = None
_TMP = Path(tempfile.gettempdir())
_KEEP = ("companysim-docker",)  # the private engine CI starts before the suite, and removes after it


def _ours() -> set[str]:
    return {p.name for p in _TMP.glob("companysim-*") if not p.name.startswith(_KEEP)}


_BEFORE = _ours()


@pytest.hookimpl(trylast=True)  # after xdist's own, which waits for the workers to exit
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when it left checkouts, scratch or test directories of ours in $TMPDIR."""
    import gc

    if "mcp_tools.sheets.libreoffice" in sys.modules:  # the office stops at exit; stop it now to check its dir
        sys.modules["mcp_tools.sheets.libreoffice"].office().shutdown()
    gc.collect()  # episodes a test dropped without close() free their checkouts when collected
    left = sorted(_ours() - _BEFORE)
    if left:
        sys.stderr.write(f"\nleft behind in {_TMP}: {', '.join(left[:20])}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if not _WORKER:  # the xdist workers' directories, each already checked by its worker
        for own in _TMP.glob(f"csgw*-{os.getpid()}"):
            shutil.rmtree(own, ignore_errors=True)
