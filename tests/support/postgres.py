"""A real PostgreSQL server on loopback for tests: Debian's `postgresql` package (installed by
.ci/run), a fresh cluster in a temporary folder, a password-protected user, stopped and removed at
the end. PostgreSQL refuses to run as root: as root the server runs as the package's `postgres`
user (or `nobody`)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.dagster_dev import free_port

USER = "dagster"
PASSWORD = "terrarium-test-password"
DATABASE = "dagster"


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin folder (Debian: /usr/lib/postgresql/N/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def require_postgres() -> Path:
    """The bin folder, or skip with the reason (fail under CI, where .ci/run installs it)."""
    folder = postgres_bin()
    if folder is None:
        reason = "PostgreSQL is not installed (Debian: apt-get install postgresql)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; .ci/run installs it")
        pytest.skip(reason)
    return folder


@dataclass(frozen=True)
class Postgres:
    host: str
    port: int
    user: str
    password: str
    database: str

    def env(self) -> dict[str, str]:
        """The variables the documented instance configuration (deploy/) reads."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_USER": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_DB": self.database,
        }

    def connect(self) -> Any:
        """A psycopg2 connection to this database (closed by the caller)."""
        import psycopg2

        return psycopg2.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=self.database,
        )

    def query(self, sql: str) -> list[tuple[object, ...]]:
        with contextlib.closing(self.connect()) as conn, conn.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())

    def execute(self, sql: str) -> None:
        """One statement outside a transaction (CREATE DATABASE cannot run in one)."""
        with contextlib.closing(self.connect()) as conn:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(sql)


def _runner() -> dict[str, object]:
    """Popen arguments that run the server as a user it accepts."""
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return {"user": entry.pw_uid, "group": entry.pw_gid}
    raise AssertionError("running as root with neither a postgres nor a nobody user")


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    folder = require_postgres()
    as_user = _runner()
    root = Path(tempfile.mkdtemp(prefix="terrarium-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    password_file = root / "password"
    password_file.write_text(PASSWORD)
    if "user" in as_user:
        for path in (root, sockets, password_file):
            os.chown(path, int(str(as_user["user"])), int(str(as_user["group"])))
    port = free_port()
    log = root / "server.log"
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    subprocess.run(
        [
            str(folder / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            f"--pwfile={password_file}",
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
        ],
        check=True,
        capture_output=True,
        env=env,
        **as_user,  # type: ignore[arg-type]
    )
    options = f"-h 127.0.0.1 -p {port} -k {sockets} -F"
    start = [str(folder / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w"]
    started = subprocess.run(
        [*start, "start"],
        capture_output=True,
        text=True,
        env=env,
        **as_user,  # type: ignore[arg-type]
    )
    try:
        assert started.returncode == 0, f"{started.stderr}\n{_read(log)}"
        server = Postgres("127.0.0.1", port, USER, PASSWORD, "postgres")
        import psycopg2

        with contextlib.closing(
            psycopg2.connect(
                host=server.host, port=port, user=USER, password=PASSWORD, dbname="postgres"
            )
        ) as conn:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE {DATABASE}")
        yield Postgres("127.0.0.1", port, USER, PASSWORD, DATABASE)
    finally:
        subprocess.run(
            [str(folder / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            env=env,
            check=False,
            **as_user,  # type: ignore[arg-type]
        )
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Postgres]:
    """One PostgreSQL server for the session's tests that use it (`pytest_plugins`)."""
    with postgres_server() as server:
        yield server


@pytest.fixture
def postgres(postgres_cluster: Postgres) -> Postgres:
    """A database of its own for each test on the session's server: what one test leaves (runs
    of a `dagster dev`) is not seen by the next, whichever order the files run in."""
    database = f"{DATABASE}_{next(_DATABASE_NUMBERS)}"
    postgres_cluster.execute(f"CREATE DATABASE {database}")
    return dataclasses.replace(postgres_cluster, database=database)


_DATABASE_NUMBERS = itertools.count(1)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-3000:]
    except OSError:
        return "(no server log)"
