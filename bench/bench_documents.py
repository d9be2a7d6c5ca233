"""docx -> PDF for 20 documents: warm LibreOffice (FileKiln's pool) vs a cold `soffice --convert-to` per file,
and the built-in pandoc + Typst engine vs LibreOffice. Prints wall times and ratios measured in this run.

    .venv/bin/python bench/bench_documents.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from converters.base import ToolEnv  # noqa: E402
from converters.engines.office import close_pools, cold_command, find_soffice, office_convert, seed_profile  # noqa: E402
from converters.engines.pandoc import font_dirs, pandoc_to_pdf  # noqa: E402
from tests.converters import doc_samples  # noqa: E402

COUNT = 20


def make_docs(tmp: Path) -> tuple[list[Path], list[Path]]:
    docx, md = [], []
    for i in range(COUNT):
        text = f"# Report {i}\n\n" + "\n\n".join(
            f"Paragraph {j} of report {i}: {doc_samples.UNICODE_LINE}" for j in range(30)
        ) + "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        md.append(doc_samples.make_markdown(tmp, f"r{i}.md", text))
        docx.append(doc_samples.make_docx(tmp, f"r{i}.docx", text))
    return docx, md


def timed(label: str, fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    elapsed = time.perf_counter() - start
    print(f"{label:<48} {elapsed:7.2f} s  ({elapsed / COUNT * 1000:6.0f} ms/doc)")
    return elapsed


def main() -> None:
    soffice = find_soffice({})
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        docx, md = make_docs(tmp)
        out = tmp / "out"
        out.mkdir()
        env = ToolEnv(models_dir=tmp / "data" / "models")
        never = lambda: False  # noqa: E731

        def pandoc_run(sources: list[Path], fmt: str) -> None:
            for i, src in enumerate(sources):
                work = tmp / f"work-{fmt}-{i}"
                work.mkdir()
                pandoc_to_pdf(env, src, fmt, out / f"p-{fmt}-{i}.pdf", work, lambda f: None, never)

        t_pandoc_md = timed("pandoc + Typst, md -> pdf", lambda: pandoc_run(md, "md"))
        t_pandoc_docx = timed("pandoc + Typst, docx -> pdf", lambda: pandoc_run(docx, "docx"))
        if soffice is None:
            print("LibreOffice not installed: LibreOffice figures skipped")
            return

        start = time.perf_counter()
        office_convert(env, docx[0], "docx", out / "warmup.pdf", "pdf", lambda f: None, never, font_dirs())
        print(f"{'warm instance start + first conversion':<48} {time.perf_counter() - start:7.2f} s")

        def warm() -> None:
            for i, src in enumerate(docx):
                office_convert(env, src, "docx", out / f"w{i}.pdf", "pdf", lambda f: None, never, font_dirs())

        t_warm = timed("FileKiln warm LibreOffice, docx -> pdf", warm)

        profile = tmp / "cold-profile"
        seed_profile(profile)
        cold_out = tmp / "cold-out"

        def cold() -> None:
            for src in docx:
                subprocess.run(cold_command(soffice, profile, src, cold_out, "pdf"), check=True,
                               capture_output=True, timeout=120)

        t_cold = timed("soffice --convert-to per file (cold), docx -> pdf", cold)
        close_pools()
        print()
        print(f"cold soffice / warm FileKiln:          {t_cold / t_warm:6.1f}x")
        print(f"LibreOffice warm / pandoc+Typst (docx): {t_warm / t_pandoc_docx:6.2f}x")
        print(f"pandoc+Typst md / pandoc+Typst docx:    {t_pandoc_md / t_pandoc_docx:6.2f}x")


if __name__ == "__main__":
    main()
