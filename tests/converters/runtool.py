"""Run a catalogue tool directly on real files, as the job engine's child process does."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from converters.base import Context, InputFile, ToolEnv
from converters.catalogue import load_catalogue
from converters.inputs.sniff import sniff


@dataclass
class ToolRun:
    outputs: list[Path]
    notes: list[str]
    progress: list[float] = field(default_factory=list)


def run_tool(
    tool_id: str,
    inputs: list[Path],
    out_dir: Path,
    params: dict[str, Any] | None = None,
    output_format: str | None = None,
    cancelled: Any = lambda: False,
    env: ToolEnv | None = None,
) -> ToolRun:
    """Validate ``params`` with the tool's model, sniff the inputs and run the tool into ``out_dir``."""
    tool = load_catalogue().get(tool_id)
    assert tool is not None, f"no tool {tool_id}"
    model = tool.params.model_validate(params or {})
    files = []
    for path in inputs:
        fmt = sniff(path, path.name)
        assert fmt in tool.accepts, f"{path.name} sniffed as {fmt}, not accepted by {tool_id}"
        files.append(InputFile(path=path, format=fmt, name=path.name))
    out_dir.mkdir(parents=True, exist_ok=True)
    env = env or ToolEnv(models_dir=out_dir.parent / "models")
    tool.precheck(files, model, env)
    seen: list[float] = []
    ctx = Context(
        inputs=files,
        params=model,
        output_format=output_format or tool.produces[0],
        out_dir=out_dir,
        progress=seen.append,
        cancelled=cancelled,
        env=env,
    )
    tool.run(ctx)
    outputs = sorted(p for p in out_dir.iterdir() if p.is_file())
    return ToolRun(outputs=outputs, notes=ctx.notes, progress=seen)


def cancel_midway(tool_id: str, inputs: list[Path], out_dir: Path, after: float, **kw: Any) -> tuple[float,
                                                                                              BaseException | None]:
    """Run a tool in a thread, cancel it after ``after`` seconds; returns (seconds it took to stop, what it raised)."""
    flag = threading.Event()
    outcome: list[BaseException | None] = []

    def work() -> None:
        try:
            run_tool(tool_id, inputs, out_dir, cancelled=flag.is_set, **kw)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(after)
    assert worker.is_alive(), "the conversion finished before it could be cancelled"
    flag.set()
    began = time.monotonic()
    worker.join(timeout=10)
    assert len(outcome) == 1, "the conversion did not stop within 10 s of the cancel"
    return time.monotonic() - began, outcome[0]


def params_error(tool_id: str, params: dict[str, Any]) -> str:
    """The message of the ValidationError the tool's params model raises for ``params``."""
    import pytest
    from pydantic import ValidationError

    tool = load_catalogue().get(tool_id)
    assert tool is not None
    with pytest.raises(ValidationError) as caught:
        tool.params.model_validate(params)
    return str(caught.value)
