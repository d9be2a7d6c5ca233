"""With no scale-out settings, FileKiln imports no server library: the desktop app and ``filekiln serve`` start
as they did before database_url, queue_url and storage_url existed. SQLAlchemy and Alembic come in only when
the data dir's schema must be made or upgraded, which a start on a current one skips."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, write_settings
from tests.postgres import PostgresServer

SERVER_LIBRARIES = ("redis", "boto3", "botocore", "s3transfer", "psycopg")
SCHEMA_LIBRARIES = ("sqlalchemy", "alembic")

PROBE = """
import json, sys
from pathlib import Path
from localapi.config import load_settings
from localapi.core.service import Service
from localapi.http.app import create_app
service = Service.open(load_settings(Path(sys.argv[1])))
create_app(service)
service.health()
service.close()
print(json.dumps(sorted(m for m in {libs} if m in sys.modules)))
"""


def imported(data: Path) -> list[str]:
    libs = SERVER_LIBRARIES + SCHEMA_LIBRARIES
    out = subprocess.run([sys.executable, "-c", PROBE.format(libs=libs), str(data)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    result: list[str] = json.loads(out.strip().splitlines()[-1])
    return result


def test_the_embedded_defaults_import_no_server_library(tmp_path: Path) -> None:
    # a new data dir: its schema is made from the snapshot of the newest migration (localapi/core/migrate.py)
    assert imported(tmp_path) == []
    assert imported(tmp_path) == []  # every start after: the schema is current, and nothing more is loaded


def test_a_bucket_brings_its_client_and_only_it(tmp_path: Path) -> None:
    # an endpoint nobody answers on: health asks the bucket, and says it cannot be reached
    write_settings(tmp_path, storage_url="s3://files/x", s3_endpoint_url="http://127.0.0.1:9",
                   s3_access_key_id="a", s3_secret_access_key="b", s3_region="us-east-1")
    assert set(imported(tmp_path)) - set(SCHEMA_LIBRARIES) == {"boto3", "botocore", "s3transfer"}


def test_postgresql_brings_its_driver_and_only_it(tmp_path: Path, postgres: PostgresServer) -> None:
    write_settings(tmp_path, database_url=postgres.create_database())
    assert set(imported(tmp_path)) == {"psycopg", *SCHEMA_LIBRARIES}  # a new database: its schema is made
    assert set(imported(tmp_path)) == {"psycopg", "sqlalchemy"}  # after: the pool is SQLAlchemy's
