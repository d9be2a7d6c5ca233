"""With no scale-out settings, FileKiln imports no server library: the desktop app and ``filekiln serve`` start
as they did before queue_url and storage_url existed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, write_settings

SERVER_LIBRARIES = ("redis", "boto3", "botocore", "s3transfer")

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
    out = subprocess.run([sys.executable, "-c", PROBE.format(libs=SERVER_LIBRARIES), str(data)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    result: list[str] = json.loads(out.strip().splitlines()[-1])
    return result


def test_the_embedded_defaults_import_no_server_library(tmp_path: Path) -> None:
    assert imported(tmp_path) == []


def test_a_bucket_brings_its_client_and_only_it(tmp_path: Path) -> None:
    # an endpoint nobody answers on: health asks the bucket, and says it cannot be reached
    write_settings(tmp_path, storage_url="s3://files/x", s3_endpoint_url="http://127.0.0.1:9",
                   s3_access_key_id="a", s3_secret_access_key="b", s3_region="us-east-1")
    assert set(imported(tmp_path)) == {"boto3", "botocore", "s3transfer"}
