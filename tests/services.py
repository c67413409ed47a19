"""Real backing services for the team-deployment tests and ``make bench``: PostgreSQL and an S3 server.

PostgreSQL comes from Debian's ``postgresql`` package (``make test`` installs it with apt when its binaries
are missing and we are root). A throwaway cluster is created with ``initdb`` in a temporary directory and
served on a free 127.0.0.1 port with trust authentication. PostgreSQL refuses to run as root, so as root
the cluster belongs to the ``postgres`` user the package creates and is driven with ``runuser``.

S3 is moto's standalone server (``moto[server]``) on 127.0.0.1, which speaks the S3 API that LanceDB's
object_store and pyarrow's S3 filesystem use, exactly like MinIO or a cloud bucket would.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

S3_KEY = "test-key"
S3_SECRET = "test-secret"  # noqa: S105 - moto accepts any credentials
S3_REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pg_bin_dir() -> Path | None:
    """Where initdb and pg_ctl live: Debian's versioned directory first, then PATH."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "initdb").is_file() and Path(candidate, "pg_ctl").is_file():
            return Path(candidate)
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


def pg_unavailable_reason() -> str | None:
    """Why a PostgreSQL server cannot be started here, or None when it can."""
    if pg_bin_dir() is None:
        return ("PostgreSQL binaries (initdb, pg_ctl) not found: install Debian's postgresql package "
                "(make test does it when run as root: apt-get install -y postgresql)")
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root without runuser: PostgreSQL cannot be started as root"
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "psycopg / psycopg_pool are not installed (pip install -e '.[team]')"
    return None


@dataclass
class PostgresServer:
    """A throwaway PostgreSQL cluster; ``url`` is a ``postgresql://`` URL for the database ``oic``."""

    data_dir: Path
    port: int
    bin_dir: Path

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/oic"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=120)

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data_dir / "db"), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.data_dir} "
                   "-c fsync=off -c max_connections=200 -c shared_buffers=32MB")
        self._run("pg_ctl", "-D", str(self.data_dir / "db"), "-l", str(self.data_dir / "server.log"),
                  "-o", options, "-w", "-t", "60", "start")
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute("CREATE DATABASE oic")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.data_dir / "db"), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.data_dir, ignore_errors=True)


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    reason = pg_unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    bin_dir = pg_bin_dir()
    assert bin_dir is not None
    # Not under pytest's tmp dirs: those are private to root, and the server may run as 'postgres'.
    data_dir = Path(tempfile.mkdtemp(prefix="oic-pg-"))
    if os.geteuid() == 0:
        shutil.chown(data_dir, "postgres", "postgres")
    server = PostgresServer(data_dir, free_port(), bin_dir)
    try:
        server.start()
    except subprocess.CalledProcessError as exc:
        server.stop()
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr or exc.stdout}") from None
    try:
        yield server
    finally:
        server.stop()


@dataclass
class S3Server:
    endpoint: str
    bucket: str

    def env(self) -> dict[str, str]:
        """The server settings that point at this bucket (see README, Deployment for teams)."""
        return {"OIC_AI_STORAGE_ENDPOINT": self.endpoint, "OIC_AI_STORAGE_REGION": S3_REGION,
                "OIC_AI_STORAGE_ACCESS_KEY_ID": S3_KEY, "OIC_AI_STORAGE_SECRET_ACCESS_KEY": S3_SECRET,
                "OIC_AI_STORAGE_ALLOW_HTTP": "true"}

    def client(self) -> object:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=S3_KEY,
                            aws_secret_access_key=S3_SECRET, region_name=S3_REGION)

    def put(self, key: str, body: bytes) -> None:
        self.client().put_object(Bucket=self.bucket, Key=key, Body=body)  # type: ignore[attr-defined]

    def keys(self, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(  # type: ignore[attr-defined]
            Bucket=self.bucket, Prefix=prefix)
        return [obj["Key"] for page in pages for obj in page.get("Contents", [])]


def s3_unavailable_reason() -> str | None:
    try:
        import boto3  # noqa: F401
        from moto.server import ThreadedMotoServer  # noqa: F401
    except ImportError:
        return "moto[server] and boto3 are not installed (pip install -e '.[test]')"
    return None


@contextlib.contextmanager
def s3_server(bucket: str = "oic-team") -> Iterator[S3Server]:
    """moto's S3 server in this process (a thread) on a free 127.0.0.1 port, with one empty bucket."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    s3 = S3Server(f"http://127.0.0.1:{port}", bucket)
    deadline = time.monotonic() + 30
    while True:
        try:
            s3.client().create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
            break
        except Exception:
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.1)
    try:
        yield s3
    finally:
        server.stop()
