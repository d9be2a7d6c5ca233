"""The files in deploy/ name only what FileKiln has: its settings, its commands and their flags. The compose
file wires every FileKiln container to the same back-ends and the same key for job passwords, the environment
example agrees with itself and with the compose file, and the systemd units pass systemd's own check."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from filekiln.cli import build_parser
from localapi.config import SettingError, Settings, load_settings
from localapi.core.jobs.sealed import Sealer
from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
ENV_EXAMPLE = DEPLOY / "filekiln.env.example"
DOCKERFILE = DEPLOY / "Dockerfile"
API_UNIT = DEPLOY / "systemd" / "filekiln-api.service"
WORKER_UNIT = DEPLOY / "systemd" / "filekiln-worker@.service"
UNITS = (API_UNIT, WORKER_UNIT)
FILEKILN_SERVICES = ("api", "worker", "worker-office")
BACKENDS = ("postgres", "redis", "seaweedfs")
VENV_FILEKILN = Path(sys.executable).parent / "filekiln"


def setting_variables() -> set[str]:
    """The FILEKILN_* names load_settings reads: a field each (tools and tool_timeouts come from
    settings.toml only), and FILEKILN_DATA_DIR."""
    return {f"FILEKILN_{f.name.upper()}" for f in fields(Settings)
            if f.name not in ("tools", "tool_timeouts")}


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict)
    return loaded


def env_example() -> dict[str, str]:
    values = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
    return values


def parse_command(args: list[str]) -> Any:
    """``args`` as FileKiln's own parser reads them; a failure if it refuses them."""
    try:
        return build_parser().parse_args(args)
    except SystemExit:
        pytest.fail(f"filekiln refuses the command line {shlex.join(args)!r}")


def unit(path: Path) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(path.read_text())
    return parser


def unit_command(line: str, instance: str = "1") -> list[str]:
    return shlex.split(line.replace("%i", instance))


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments left out."""
    joined = re.sub(r"\\\n", " ", "\n".join(
        line for line in DOCKERFILE.read_text().splitlines() if not line.lstrip().startswith("#")))
    return [(word.upper(), rest.strip()) for word, _, rest in
            (line.strip().partition(" ") for line in joined.splitlines() if line.strip())]


def image_data_dir() -> str:
    envs = " ".join(args for word, args in dockerfile() if word == "ENV")
    found = re.search(r"FILEKILN_DATA_DIR=(\S+)", envs)
    assert found, "the image sets no FILEKILN_DATA_DIR"
    return found.group(1)


# --------------------------------------------------------------------------- names and values


@pytest.mark.parametrize("path", [COMPOSE, ENV_EXAMPLE, *UNITS], ids=lambda p: p.name)
def test_every_filekiln_variable_is_a_setting(path: Path) -> None:
    named = set(re.findall(r"\bFILEKILN_[A-Z0-9_]+", path.read_text()))
    assert named - setting_variables() == set()


def test_the_env_example_is_plain_name_equals_value_lines() -> None:
    """compose's env_file and systemd's EnvironmentFile read it alike only without quotes or spaces."""
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*=[^\s\"'#]*", line), line


def test_the_env_example_leaves_the_data_dir_to_each_process() -> None:
    assert "FILEKILN_DATA_DIR" not in env_example()


def test_the_env_example_gives_every_process_one_params_key_to_replace(tmp_path: Path) -> None:
    """Processes with data dirs of their own share the key only through the setting; the placeholder stops
    the start instead of leaving each process a key of its own."""
    placeholder = env_example()["FILEKILN_PARAMS_KEY"]
    assert placeholder.startswith("CHANGE-ME")
    with pytest.raises(SettingError):
        Sealer(tmp_path / "params.key", placeholder)


def test_the_env_example_gives_filekiln_its_back_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in env_example().items():
        monkeypatch.setenv(name, value)
    settings = load_settings(tmp_path)
    assert settings.database_url.startswith("postgresql://")
    assert settings.queue_url.startswith("redis://")
    assert settings.storage_url.startswith("s3://")
    assert settings.s3_endpoint_url and settings.s3_access_key_id and settings.s3_secret_access_key
    assert settings.s3_presigned_downloads is False
    assert settings.strict_auth is True
    assert settings.port == 8741


def test_the_env_example_passwords_agree_with_the_back_ends() -> None:
    env = env_example()
    database = urlsplit(env["FILEKILN_DATABASE_URL"])
    assert (database.username, database.password) == (env["POSTGRES_USER"], env["POSTGRES_PASSWORD"])
    assert database.path == "/" + env["POSTGRES_DB"]
    assert urlsplit(env["FILEKILN_QUEUE_URL"]).password == env["REDIS_PASSWORD"]


def test_the_env_example_names_the_compose_services() -> None:
    env, services = env_example(), compose()["services"]
    hosts = {urlsplit(env[name]).hostname for name in
             ("FILEKILN_DATABASE_URL", "FILEKILN_QUEUE_URL", "FILEKILN_S3_ENDPOINT_URL")}
    assert hosts == set(BACKENDS) and hosts <= set(services)


# --------------------------------------------------------------------------- the compose file


def test_compose_has_the_whole_set() -> None:
    services = compose()["services"]
    assert set(services) >= {*BACKENDS, "bucket", *FILEKILN_SERVICES}
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["worker-office"]["build"]["args"]["WITH_OFFICE"] == "1"


@pytest.mark.parametrize("name", ["postgres", "redis", "seaweedfs", "api"])
def test_compose_checks_the_health_of(name: str) -> None:
    assert compose()["services"][name]["healthcheck"]["test"]


def test_compose_publishes_only_the_api_and_on_loopback_only() -> None:
    services = compose()["services"]
    published = {name: s["ports"] for name, s in services.items() if s.get("ports")}
    assert published == {"api": ["127.0.0.1:8741:8741"]}


@pytest.mark.parametrize("name", FILEKILN_SERVICES)
def test_compose_filekiln_services_share_the_env_file_and_the_back_ends(name: str) -> None:
    service = compose()["services"][name]
    assert service["env_file"] == "filekiln.env"  # FILEKILN_PARAMS_KEY too: nothing overrides it
    assert not any("FILEKILN_" in str(value) for value in service.get("environment", {}))
    assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert service["depends_on"]["redis"]["condition"] == "service_healthy"
    assert service["depends_on"]["bucket"]["condition"] == "service_completed_successfully"


@pytest.mark.parametrize("name", [*BACKENDS, "bucket"])
def test_compose_keeps_the_params_key_out_of_the_back_ends(name: str) -> None:
    assert compose()["services"][name]["environment"]["FILEKILN_PARAMS_KEY"] == ""


@pytest.mark.parametrize("name", [*FILEKILN_SERVICES, "bucket"])
def test_compose_builds_filekiln_from_the_repository(name: str) -> None:
    build = compose()["services"][name]["build"]
    context = (COMPOSE.parent / build["context"]).resolve()
    assert context == ROOT and (context / build["dockerfile"]).resolve() == DOCKERFILE


@pytest.mark.parametrize(("name", "command", "workers"), [("api", "serve", 0), ("worker", "worker", 2),
                                                          ("worker-office", "worker", 1)])
def test_compose_command_lines_parse(name: str, command: str, workers: int) -> None:
    service = compose()["services"][name]
    assert "entrypoint" not in service  # the image's: filekiln
    args = parse_command(service["command"])
    assert (args.command, args.workers) == (command, workers)


def test_compose_api_binds_beyond_loopback_on_the_published_port() -> None:
    args = parse_command(compose()["services"]["api"]["command"])
    assert (args.host, args.port) == ("0.0.0.0", 8741)


# --------------------------------------------------------------------------- the systemd units


@pytest.mark.parametrize("path", UNITS, ids=lambda p: p.name)
def test_unit_has_what_a_filekiln_service_needs(path: Path) -> None:
    service = unit(path)["Service"]
    assert unit(path)["Install"]["WantedBy"] == "multi-user.target"
    assert service["User"] == "filekiln"
    assert service["EnvironmentFile"] == "/etc/filekiln/filekiln.env"
    assert service["Restart"] == "on-failure"
    assert service["KillMode"] == "mixed"
    assert int(service["TimeoutStopSec"]) >= 30  # a worker takes up to 15 s to hand its jobs back
    for key in ("NoNewPrivileges", "ProtectHome", "PrivateTmp"):
        assert service[key] == "yes", key
    assert service["ProtectSystem"] == "strict"


@pytest.mark.parametrize(("path", "command"), [(API_UNIT, "serve"), (WORKER_UNIT, "worker")], ids=["api", "worker"])
def test_unit_command_line_parses_on_its_own_writable_data_dir(path: Path, command: str) -> None:
    service = unit(path)["Service"]
    binary, *args = unit_command(service["ExecStart"])
    assert binary == "/opt/filekiln/bin/filekiln"
    parsed = parse_command(args)
    assert parsed.command == command
    data_dir = str(parsed.data_dir)
    assert data_dir == "/var/lib/" + service["StateDirectory"].replace("%i", "1")
    assert service["ReadWritePaths"].replace("%i", "1") == data_dir


def test_api_unit_runs_no_job_workers() -> None:
    assert parse_command(unit_command(unit(API_UNIT)["Service"]["ExecStart"])[1:]).workers == 0


def test_each_worker_instance_has_a_data_dir_of_its_own() -> None:
    line = unit(WORKER_UNIT)["Service"]["ExecStart"]
    dirs = {str(parse_command(unit_command(line, n)[1:]).data_dir) for n in ("1", "2")}
    assert len(dirs) == 2


needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                                   reason="systemd-analyze is not installed here (apt-get install systemd)")


@needs_systemd
@pytest.mark.parametrize(("path", "name"), [(API_UNIT, "filekiln-api.service"),
                                            (WORKER_UNIT, "filekiln-worker@1.service")], ids=["api", "worker"])
def test_unit_passes_systemd_analyze_verify(path: Path, name: str, tmp_path: Path) -> None:
    """systemd's own reading of the unit: unknown keys and values it cannot parse are only warnings (exit
    code 0), so any line about the unit fails too. ExecStart must name a real program: this venv's filekiln."""
    assert VENV_FILEKILN.exists()
    text = path.read_text()
    assert "/opt/filekiln/bin/filekiln " in text
    (tmp_path / path.name).write_text(text.replace("/opt/filekiln/bin/filekiln ", f"{VENV_FILEKILN} "))
    result = subprocess.run(["systemd-analyze", "verify", str(tmp_path / name)],
                            capture_output=True, text=True, timeout=60)
    said = [line for line in (result.stdout + result.stderr).splitlines()
            if path.name in line or name in line or "filekiln" in line]
    assert result.returncode == 0 and not said, result.stdout + result.stderr


# --------------------------------------------------------------------------- the Dockerfile


def test_dockerfile_installs_filekiln_with_the_scale_extra() -> None:
    installs = [args for word, args in dockerfile() if word == "RUN" and "pip install" in args]
    assert installs and all(re.search(r"\[scale\b", args) for args in installs), installs


def test_dockerfile_entrypoint_is_the_filekiln_command() -> None:
    (entrypoint,) = [json.loads(args) for word, args in dockerfile() if word == "ENTRYPOINT"]
    assert entrypoint == ["filekiln"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "filekiln" in scripts


def test_dockerfile_default_command_parses() -> None:
    (command,) = [json.loads(args) for word, args in dockerfile() if word == "CMD"]
    assert parse_command(command).command == "serve"


def test_dockerfile_copies_what_is_in_the_repository() -> None:
    for word, args in dockerfile():
        if word == "COPY" and not args.startswith("--from"):
            *sources, _target = args.split()
            for source in sources:
                assert (ROOT / source).exists(), source


def test_dockerfile_runs_filekiln_as_a_user_with_its_data_dir() -> None:
    users = [args for word, args in dockerfile() if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    assert image_data_dir() == "/var/lib/filekiln"
