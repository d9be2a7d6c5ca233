"""``email-to-pdf``: an e-mail message (EML, or Outlook's MSG) as a PDF: its headers, its body, its inline
pictures, and its attachments listed (or also written out).

Both kinds are read into one :class:`~converters.tools.email.message.Message` (EML by the standard
library, MSG by ``extract-msg``) and laid out by one path (:mod:`converters.tools.email.render`), so an
MSG looks exactly like the same message saved as EML. Nothing a message points to is fetched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import Field

from converters.base import CamelParams, Context, Engine, InputFile, Tool, ToolEnv, atomic_output
from converters.engines.mupdf import PYMUPDF
from converters.tools.email.message import Message, read_eml
from converters.tools.email.render import render

EXTRACT_MSG = Engine(name="extract-msg", module="extract_msg", distribution="extract-msg",
                     install_hint="Install it with: pip install extract-msg")


class EmailParams(CamelParams):
    attachments: Literal["list", "extract"] = Field(
        "list", description="list: name and size of each attachment at the end of the PDF; extract: also write "
        "each attachment (an attached message as a file of its own) beside the PDF (the result is then a ZIP).",
        json_schema_extra={
            "x-enumLabels": {"list": "List them", "extract": "List and save them"},
            "x-enumDescriptions": {
                "list": "Name and size of each attachment at the end of the PDF.",
                "extract": "Each attachment also saved beside the PDF (the result is then a ZIP).",
            },
        },
    )
    prefer: Literal["html", "text"] = Field(
        "html", description="Which body to show when the message has both.",
        title="Message body",
        json_schema_extra={"x-enumLabels": {"html": "Formatted (HTML)", "text": "Plain text"}},
    )


class EmailToPdf(Tool):
    """Turn an e-mail message into a PDF: headers, body, inline pictures, and its attachments listed."""

    id = "email-to-pdf"
    category = "documents"
    title = "E-mail to PDF"
    description = (
        "Turn an e-mail message (.eml, or Outlook .msg) into a PDF: sender, recipients, date and subject, the "
        "message as shown, its inline pictures, and a list of its attachments and attached messages "
        "(optionally written out too). Nothing it links to is fetched."
    )
    accepts = ("eml", "msg")
    produces = ("pdf",)
    params = EmailParams
    engines = (PYMUPDF, EXTRACT_MSG)
    timeout_seconds = 300.0

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        """An MSG's directory against the limits (attachments, nesting, RTF size) before the job is queued."""
        for source in inputs:
            if source.format == "msg":
                from converters.tools.email.outlook import check_msg

                check_msg(source.path)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        params: EmailParams = ctx.params
        message = self.read(source)
        progress(0.2)
        ctx.check_cancelled()
        pdf = render(message, params.prefer, ctx, progress)
        with atomic_output(ctx.output_path(source.name or source.path.name, "pdf")) as tmp:
            tmp.write_bytes(pdf)
        if params.attachments == "extract":
            for part in message.attachments:
                ctx.check_cancelled()
                if part.data:
                    with atomic_output(ctx.output_path(part.name, attachment_ext(part.name))) as tmp:
                        tmp.write_bytes(part.data)
        progress(1.0)

    def read(self, source: InputFile) -> Message:
        if source.format == "msg":
            from converters.tools.email.outlook import read_msg  # extract-msg loads only when an MSG comes

            return read_msg(source.path)
        return read_eml(source.path)


def attachment_ext(name: str) -> str:
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return suffix if suffix.isalnum() and 1 <= len(suffix) <= 12 else "bin"
