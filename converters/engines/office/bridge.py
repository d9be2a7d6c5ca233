"""The UNO side of FileKiln's LibreOffice link: run by a Python that can ``import uno``.

This file is executed as a script by LibreOffice's own Python (or Debian's ``python3`` with
``python3-uno``), never imported by FileKiln itself: it must not import anything from the project.

It connects to a running ``soffice --accept=pipe,name=...`` and reads one JSON request per line on
stdin::

    {"id": 1, "input": "/abs/in.docx", "output": "/abs/out.pdf", "filter": "writer_pdf_Export",
     "load_filter": null, "load_options": null}

and answers one JSON line per request on stdout, after a line with the page count once it is loaded and
any number of progress lines from the export filter::

    {"id": 1, "pages": 3}
    {"id": 1, "progress": 0.42}
    {"id": 1, "ok": true, "pages": 3}
    {"id": 1, "ok": false, "code": "damaged_input", "message": "..."}

Documents are loaded hidden, read-only, with macros never executed and links never updated.
"""

import json
import sys
import time
from typing import Any

import uno
import unohelper
from com.sun.star.beans import PropertyValue
from com.sun.star.task import XStatusIndicator

NEVER_EXECUTE = 0  # com.sun.star.document.MacroExecMode.NEVER_EXECUTE
NO_UPDATE = 0  # com.sun.star.document.UpdateDocMode.NO_UPDATE


def prop(name: str, value: Any) -> Any:
    p = PropertyValue()
    p.Name = name
    p.Value = value
    return p


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Progress(unohelper.Base, XStatusIndicator):  # type: ignore[misc]
    """Forwards the export filter's own progress (it counts pages) to the host."""

    def __init__(self, request_id: int) -> None:
        self.request_id = request_id
        self.range = 0
        self.last = -1.0

    def start(self, text: str, range_: int) -> None:
        self.range = max(int(range_), 0)

    def end(self) -> None:
        pass

    def setText(self, text: str) -> None:
        pass

    def setValue(self, value: int) -> None:
        if self.range > 0:
            fraction = min(max(value / self.range, 0.0), 1.0)
            if fraction - self.last >= 0.02:
                self.last = fraction
                send({"id": self.request_id, "progress": round(fraction, 3)})

    def reset(self) -> None:
        pass


def connect(pipe: str, seconds: float) -> Any:
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    deadline = time.monotonic() + seconds
    while True:
        try:
            ctx = resolver.resolve(f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext")
            return ctx.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", ctx)
        except Exception:  # NoConnectException until soffice listens
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def page_count(doc: Any) -> int:
    try:
        if doc.supportsService("com.sun.star.text.TextDocument"):
            return int(doc.getCurrentController().getPropertyValue("PageCount"))
        if doc.supportsService("com.sun.star.presentation.PresentationDocument"):
            return int(doc.getDrawPages().getCount())
        if doc.supportsService("com.sun.star.drawing.DrawingDocument"):
            return int(doc.getDrawPages().getCount())
        if doc.supportsService("com.sun.star.sheet.SpreadsheetDocument"):
            return int(doc.getSheets().getCount())
    except Exception:
        pass
    return 0


def convert(desktop: Any, request: dict[str, Any]) -> dict[str, Any]:
    load = [
        prop("Hidden", True),
        prop("ReadOnly", True),
        prop("MacroExecutionMode", NEVER_EXECUTE),
        prop("UpdateDocMode", NO_UPDATE),
        prop("Silent", True),
    ]
    if request.get("load_filter"):
        load.append(prop("FilterName", request["load_filter"]))
    if request.get("load_options"):
        load.append(prop("FilterOptions", request["load_options"]))
    url = uno.systemPathToFileUrl(request["input"])
    doc = desktop.loadComponentFromURL(url, "_blank", 0, tuple(load))
    if doc is None:
        return {"ok": False, "code": "damaged_input", "message": "LibreOffice could not open the document"}
    try:
        pages = page_count(doc)
        send({"id": request["id"], "pages": pages})
        store = [prop("FilterName", request["filter"]), prop("Overwrite", True)]
        if request.get("store_options"):
            store.append(prop("FilterOptions", request["store_options"]))
        store.append(prop("StatusIndicator", Progress(request["id"])))
        doc.storeToURL(uno.systemPathToFileUrl(request["output"]), tuple(store))
        return {"ok": True, "pages": pages}
    finally:
        try:
            doc.close(True)
        except Exception:
            doc.dispose()


def main() -> None:
    pipe = sys.argv[1]
    desktop = connect(pipe, float(sys.argv[2]) if len(sys.argv) > 2 else 60.0)
    send({"ready": True})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            answer = convert(desktop, request)
        except Exception as exc:  # an IllegalArgumentException / IOException from the filter
            name = type(exc).__name__
            code = "damaged_input" if "IllegalArgument" in name or "IOException" in name else "engine_failed"
            answer = {"ok": False, "code": code, "message": f"{name}: {getattr(exc, 'Message', str(exc))}"}
        answer["id"] = request["id"]
        send(answer)
    # stdin closed: the host is gone (or done). Take soffice down with us rather than leave it orphaned.
    try:
        desktop.terminate()
    except Exception:
        pass


if __name__ == "__main__":
    main()
