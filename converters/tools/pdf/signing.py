# PyMuPDF annotates only part of its API; calls into the rest are untyped by no fault of ours.
# mypy: disable-error-code="no-untyped-call"
"""Digital signatures on pyHanko: ``pdf-sign`` (PAdES, visible or not) and ``pdf-verify-signatures``.

The PKCS#12 file and its password never reach an error message: failures to read it are told in
words of our own, not the library's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SecretStr

from converters.base import (
    CamelParams,
    Context,
    ConversionError,
    Engine,
    InputFile,
    NoParams,
    ToolEnv,
    atomic_output,
)
from converters.engines.mupdf import PYMUPDF
from converters.tools.pdf.common import PdfTool, place_labels, stem_of

if TYPE_CHECKING:
    import pymupdf

PYHANKO = Engine(
    name="pyHanko", module="pyhanko", distribution="pyhanko", install_hint="Install it with: pip install pyhanko"
)
MAX_PKCS12_BYTES = 1024 * 1024  # a key and a chain of certificates fit in a few kilobytes
SIGNATURE_SIZE = (200.0, 60.0)  # points: room for the signer's name and the time on two lines
MARGIN = 36.0  # points between a corner placement and the page's edges


# --------------------------------------------------------------------------- the signer's key


@dataclass(frozen=True)
class Credentials:
    """What a PKCS#12 file holds, in the forms pyHanko takes (asn1crypto objects)."""

    certificate: Any
    key: Any
    chain: list[Any]
    subject: str


def load_pkcs12(data: bytes, password: str) -> Credentials:
    """The key and certificates of a PKCS#12 file, or ``bad_certificate`` saying what is wrong with it."""
    from asn1crypto import keys, x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    if len(data) > MAX_PKCS12_BYTES:
        raise ConversionError("bad_certificate", "The PKCS#12 file is too large to be a key and its certificates.")
    try:
        bundle = pkcs12.load_pkcs12(data, password.encode("utf-8") or None)
    except (ValueError, TypeError):
        # cryptography says the same for a wrong password and for a damaged file
        raise ConversionError("bad_certificate", "The PKCS#12 file cannot be opened: the password is wrong "
                                                 "or the file is damaged.") from None
    if bundle.key is None:
        raise ConversionError("bad_certificate", "The PKCS#12 file holds no private key to sign with.")
    if bundle.cert is None:
        raise ConversionError("bad_certificate", "The PKCS#12 file holds no certificate for its key.")
    cert = bundle.cert.certificate
    now = datetime.now(UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise ConversionError("bad_certificate", f"The certificate is valid from {cert.not_valid_before_utc:%Y-%m-%d} "
                                                 f"to {cert.not_valid_after_utc:%Y-%m-%d}, not today.")
    der = serialization.Encoding.DER
    key_der = bundle.key.private_bytes(der, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return Credentials(
        certificate=x509.Certificate.load(cert.public_bytes(der)),
        key=keys.PrivateKeyInfo.load(key_der),
        chain=[x509.Certificate.load(extra.certificate.public_bytes(der)) for extra in bundle.additional_certs],
        subject=cert.subject.rfc4514_string(),
    )


# --------------------------------------------------------------------------- pdf-sign

Corner = Literal["bottom-right", "bottom-left", "top-right", "top-left"]


class SignParams(CamelParams):
    password: SecretStr = Field(..., max_length=1024, description="Password of the PKCS#12 (.p12/.pfx) file.")
    visible: bool = Field(False, description="Show the signature as a box on a page (otherwise it is invisible).")
    page: int = Field(1, ge=1, le=100_000, description="Page the visible signature goes on, 1-based.")
    position: Corner = Field(
        "bottom-right", description="Corner the visible signature sits in.",
        json_schema_extra={"x-enumLabels": place_labels(Corner)},
    )
    box: list[float] | None = Field(
        None, min_length=4, max_length=4,
        description="Exact place of the visible signature, [x0, y0, x1, y1] in points from the top-left of the "
                    "page as shown; overrides position.",
    )
    reason: str | None = Field(None, max_length=200, description="Why the document is signed.")
    location: str | None = Field(None, max_length=200, description="Where it is signed.")
    field_name: str | None = Field(
        None, min_length=1, max_length=100, pattern=r"^[^.]+$",
        description="Name of the signature field (default Signature1, Signature2 ...); an existing empty "
                    "field of that name is filled.",
    )


def check_sign_inputs(inputs: Sequence[InputFile]) -> None:
    if [source.format for source in inputs] != ["pdf", "p12"]:
        raise ConversionError("invalid_params", "pdf-sign takes two files, in this order: the PDF, then the "
                                                "PKCS#12 (.p12/.pfx) file with the key and certificate.")


def signature_box(page: pymupdf.Page, params: SignParams) -> tuple[int, int, int, int]:
    """The visible signature's rectangle in the page's PDF coordinates (origin bottom-left, unrotated)."""
    import pymupdf

    shown = page.rect
    if params.box is not None:
        rect = pymupdf.Rect(params.box)
        if rect.is_empty or not rect.intersects(shown):
            raise ConversionError("invalid_params", f"The box {params.box} is empty or off the page, "
                                                    f"which is {shown.width:g} x {shown.height:g} points.")
    else:
        width, height = SIGNATURE_SIZE
        x0 = MARGIN if params.position.endswith("left") else shown.width - MARGIN - width
        y0 = MARGIN if params.position.startswith("top") else shown.height - MARGIN - height
        rect = pymupdf.Rect(x0, y0, x0 + width, y0 + height)
    pdf = rect * page.derotation_matrix * ~page.transformation_matrix
    pdf.normalize()
    return round(pdf.x0), round(pdf.y0), round(pdf.x1), round(pdf.y1)


class PdfSign(PdfTool):
    """Sign a PDF (PAdES baseline B) with the key of a PKCS#12 file; earlier signatures stay valid."""

    id = "pdf-sign"
    title = "Sign PDF"
    description = (
        "Add a digital signature (PAdES) with your certificate: give the PDF, then the PKCS#12 (.p12/.pfx) file "
        "and its password. Visible as a box on a page, or invisible."
    )
    accepts = ("pdf", "p12")
    params = SignParams
    engines = (PYMUPDF, PYHANKO)
    merges_inputs = True
    max_inputs = 2

    def precheck(self, inputs: Sequence[InputFile], params: Any, env: ToolEnv | None = None) -> None:
        check_sign_inputs(inputs)
        super().precheck(inputs, params, env)

    def check_document(self, doc: pymupdf.Document, params: Any, env: ToolEnv | None) -> None:
        super().check_document(doc, params, env)
        if (doc.metadata or {}).get("encryption"):
            raise ConversionError("password_protected", "The PDF is encrypted (it restricts what may be done with "
                                                        "it); remove that first with pdf-unlock, then sign.")
        if params.visible and params.page > doc.page_count:
            raise ConversionError("invalid_pages", f"Page {params.page} does not exist: the document has "
                                                   f"{doc.page_count} page{'s' if doc.page_count != 1 else ''}.")

    def run(self, ctx: Context) -> None:
        params: SignParams = ctx.params
        check_sign_inputs(ctx.inputs)
        source, keyfile = ctx.inputs
        doc = self.open_checked(ctx, source)
        try:
            repaired = doc.is_repaired
            box = signature_box(doc[params.page - 1], params) if params.visible else None
            data = doc.tobytes(garbage=1) if repaired else None  # pyHanko reads only well-formed files
        finally:
            doc.close()
        ctx.progress(0.2)
        credentials = load_pkcs12(keyfile.path.read_bytes(), params.password.get_secret_value())
        ctx.progress(0.5)
        ctx.check_cancelled()
        target = ctx.output_path(stem_of(source), "pdf")
        with atomic_output(target) as tmp:
            sign_file(data if data is not None else source.path.read_bytes(), tmp, credentials, params, box)
        ctx.notes.append(f"{source.name}: signed as {credentials.subject}.")
        ctx.progress(1.0)


def _free_field_name(reader: Any, wanted: str | None) -> str:
    """``wanted`` when it is free or an empty field; else the first free ``SignatureN``."""
    from pyhanko.sign import fields

    taken = {name: value is not None for name, value, _ in fields.enumerate_sig_fields(reader)}
    if wanted is not None:
        if taken.get(wanted):
            raise ConversionError("invalid_params", f"The PDF's field {wanted!r} is already signed; "
                                                    "choose another fieldName.")
        return wanted
    number = 1
    while f"Signature{number}" in taken:
        number += 1
    return f"Signature{number}"


def sign_file(data: bytes, target: Path, credentials: Credentials, params: SignParams,
              box: tuple[int, int, int, int] | None) -> None:
    """Append a PAdES signature to the PDF ``data`` as an incremental update, written to ``target``."""
    import io

    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.pdf_utils.misc import PdfError
    from pyhanko.sign import fields, signers
    from pyhanko.sign.general import SigningError
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    try:
        writer = IncrementalPdfFileWriter(io.BytesIO(data), strict=False)
        name = _free_field_name(writer.prev, params.field_name)
        spec = fields.SigFieldSpec(name, on_page=params.page - 1, box=box)
        signer = signers.SimpleSigner(
            signing_cert=credentials.certificate, signing_key=credentials.key,
            cert_registry=SimpleCertificateStore.from_certs(credentials.chain),
        )
        meta = signers.PdfSignatureMetadata(
            field_name=name, md_algorithm="sha256", subfilter=fields.SigSeedSubFilter.PADES,
            reason=params.reason, location=params.location,
        )
        with open(target, "wb") as out:
            signers.PdfSigner(meta, signer=signer, new_field_spec=spec).sign_pdf(writer, output=out)
    except (PdfError, SigningError, ValueError, KeyError) as exc:
        raise ConversionError("damaged_input", f"The PDF could not be signed: {type(exc).__name__}.") from None


# --------------------------------------------------------------------------- pdf-verify-signatures


@contextmanager
def _untrusted_expected() -> Iterator[None]:
    """pyHanko logs a warning with a traceback for each signer it cannot trust; with no trust roots given,
    that is every signer, and the report already says so."""
    log = logging.getLogger("pyhanko.sign.validation.generic_cms")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _when(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value is not None else None


def _common_name(cert: Any) -> str:
    native = cert.subject.native
    return str(native.get("common_name") or cert.subject.human_friendly)


def _changes(status: Any) -> str:
    """What the revisions after the signature did: ``none``, ``form_filling``, ``annotations``, ``other``,
    or ``suspicious`` when pyHanko's analysis found changes a signed document must not get."""
    from pyhanko.sign.diff_analysis import DiffResult

    if isinstance(status.diff_result, DiffResult):
        return str(status.diff_result.modification_level.name.lower())
    return "suspicious" if status.diff_result is not None else "none"


def signature_report(embedded: Any) -> dict[str, Any]:
    """One signature's entry in the report: who, when, whether its bytes are intact, what came after it."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    entry: dict[str, Any] = {"fieldName": embedded.field_name}
    try:
        cert = embedded.signer_cert
        entry["signer"] = _common_name(cert)
        entry["certificate"] = {
            "subject": cert.subject.human_friendly, "issuer": cert.issuer.human_friendly,
            "selfSigned": cert.subject == cert.issuer, "serialNumber": str(cert.serial_number),
            "validFrom": _when(cert["tbs_certificate"]["validity"]["not_before"].native),
            "validTo": _when(cert["tbs_certificate"]["validity"]["not_after"].native),
        }
        entry["chain"] = [c.subject.human_friendly for c in embedded.other_embedded_certs]
        # No trust roots: the report tells what the signature proves about the file, not whom to trust.
        with _untrusted_expected():
            status = validate_pdf_signature(embedded, ValidationContext(trust_roots=[], allow_fetching=False))
    except Exception as exc:  # noqa: BLE001 - pyHanko raises many kinds on a mangled signature
        entry.update(integrity="broken", problem=f"The signature cannot be checked: {type(exc).__name__}.")
        entry.update(trusted=False, modifiedAfterSigning=None, coverage=None)
        return entry
    entry["signingTime"] = _when(status.signer_reported_dt)
    entry["integrity"] = "intact" if status.intact and status.valid else "broken"
    entry["coverage"] = "entireFile" if status.coverage == SignatureCoverageLevel.ENTIRE_FILE else (
        "entireRevision" if status.coverage == SignatureCoverageLevel.ENTIRE_REVISION else "partial")
    entry["modifiedAfterSigning"] = status.coverage != SignatureCoverageLevel.ENTIRE_FILE
    entry["changesAfterSigning"] = _changes(status)
    entry["trusted"] = False
    entry["trust"] = "not checked against trust roots" + (" (self-signed)" if entry["certificate"]["selfSigned"]
                                                          else "")
    return entry


class PdfVerifySignatures(PdfTool):
    """Report each digital signature of a PDF: signer, time, integrity, and what changed after it."""

    id = "pdf-verify-signatures"
    title = "Verify PDF signatures"
    description = (
        "Check every digital signature in a PDF: who signed, when, whether the signed bytes are intact, and "
        "whether the document was changed after signing. A JSON report."
    )
    produces = ("json",)
    params = NoParams
    engines = (PYMUPDF, PYHANKO)

    def convert(self, ctx: Context, source: InputFile, progress: Callable[[float], None]) -> None:
        import io

        from pyhanko.pdf_utils.misc import PdfError
        from pyhanko.pdf_utils.reader import PdfFileReader

        self.open_checked(ctx, source).close()  # password and damage checks, as for every PDF tool
        data = source.path.read_bytes()
        try:
            signatures = list(PdfFileReader(io.BytesIO(data), strict=False).embedded_signatures)
        except (PdfError, ValueError, KeyError) as exc:
            raise ConversionError("damaged_input", f"The PDF's signatures cannot be read: {type(exc).__name__}.") \
                from None
        if not signatures:
            raise ConversionError("not_signed", f"{source.name} has no digital signature.")
        entries = []
        for done, embedded in enumerate(signatures, start=1):
            ctx.check_cancelled()
            entries.append(signature_report(embedded))
            progress(0.9 * done / len(signatures))
        report = {"file": source.name, "signatureCount": len(entries), "signatures": entries}
        target = ctx.output_path(stem_of(source), "json")
        with atomic_output(target) as tmp:
            tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
        progress(1.0)
