"""pdf-sign and pdf-verify-signatures with a certificate made here; signatures checked with pyHanko directly."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID
from pyhanko.pdf_utils.reader import PdfFileReader
from pyhanko.sign.validation import validate_pdf_signature
from pyhanko.sign.validation.status import SignatureCoverageLevel
from pyhanko_certvalidator import ValidationContext

from converters.base import ConversionError
from converters.inputs.sniff import sniff
from tests.converters import pdf_samples as pdfs
from tests.converters.runtool import run_tool

PASSWORD = "correct horse battery staple"
SIGNER = "Ada Lovelace"


def certificate(days: int = 30, start: int = -1) -> tuple[Any, x509.Certificate]:
    """A self-signed RSA certificate for ``SIGNER``, valid from ``start`` to ``start + days`` days from now."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SIGNER),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Analytical Engines")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now + datetime.timedelta(days=start))
            .not_valid_after(now + datetime.timedelta(days=start + days))
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


@pytest.fixture(scope="module")
def keypair() -> tuple[Any, x509.Certificate]:
    return certificate()


def p12_file(path: Path, key: Any, cert: x509.Certificate, password: str = PASSWORD) -> Path:
    encryption = serialization.BestAvailableEncryption(password.encode())
    path.write_bytes(pkcs12.serialize_key_and_certificates(b"signer", key, cert, None, encryption))
    return path


def trust(cert: x509.Certificate) -> ValidationContext:
    from asn1crypto import x509 as asn1_x509

    root = asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))
    return ValidationContext(trust_roots=[root], allow_fetching=False)


def sign(tmp_path: Path, keypair: tuple[Any, x509.Certificate], source: Path | None = None,
         **params: Any) -> Path:
    source = source or pdfs.text_pdf(tmp_path / "contract.pdf", 2)
    keyfile = p12_file(tmp_path / "signer.p12", *keypair)
    [output] = run_tool("pdf-sign", [source, keyfile], tmp_path / "signed", {"password": PASSWORD, **params}).outputs
    return output


def verify(path: Path, out: Path) -> dict[str, Any]:
    [report] = run_tool("pdf-verify-signatures", [path], out).outputs
    return dict(json.loads(report.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- pdf-sign


def test_a_pkcs12_file_is_sniffed_as_p12(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    assert sniff(p12_file(tmp_path / "upload", *keypair), "upload") == "p12"


def test_the_signature_is_intact_covers_the_whole_file_and_names_the_signer(
        tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    output = sign(tmp_path, keypair, reason="Approved", location="London")
    with output.open("rb") as f:
        [embedded] = PdfFileReader(f).embedded_signatures
        status = validate_pdf_signature(embedded, trust(keypair[1]))
        assert status.intact and status.valid and status.trusted
        assert status.coverage == SignatureCoverageLevel.ENTIRE_FILE
        assert status.signing_cert.subject.native["common_name"] == SIGNER
        assert embedded.sig_object["/Reason"] == "Approved" and embedded.sig_object["/Location"] == "London"
        assert embedded.sig_object["/SubFilter"] == "/ETSI.CAdES.detached"  # PAdES
    with pymupdf.open(output) as doc:
        assert doc.page_count == 2 and pdfs.marker(2) in doc[1].get_text()


def test_an_invisible_signature_has_no_box(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    with pymupdf.open(sign(tmp_path, keypair)) as doc:
        [widget] = doc[0].widgets()
        assert widget.field_type == pymupdf.PDF_WIDGET_TYPE_SIGNATURE and widget.rect.is_empty


def test_a_visible_signature_sits_in_the_corner_asked_for_on_the_page_asked_for(
        tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    output = sign(tmp_path, keypair, visible=True, page=2, position="top-left")
    with pymupdf.open(output) as doc:
        assert list(doc[0].widgets()) == []
        [widget] = doc[1].widgets()
        assert widget.rect == pymupdf.Rect(36, 36, 236, 96)
        pix = doc[1].get_pixmap(dpi=72, clip=widget.rect)
        assert any(pix.pixel(x, y) != (255, 255, 255) for x in range(0, 200, 4) for y in range(0, 60, 4))


def test_a_box_is_measured_on_the_page_as_shown(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    source = pdfs.rotated_pdf(tmp_path / "turned.pdf", 90)  # 400 x 600 portrait, shown as 600 x 400
    output = sign(tmp_path, keypair, source, visible=True, box=[400, 300, 580, 380])
    with pymupdf.open(output) as doc:
        [widget] = doc[0].widgets()
        assert widget.rect * doc[0].rotation_matrix == pymupdf.Rect(400, 300, 580, 380)


def test_signing_twice_keeps_the_first_signature_intact(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    once = sign(tmp_path / "a", keypair)
    twice = sign(tmp_path / "b", keypair, once)
    with twice.open("rb") as f:
        first, second = PdfFileReader(f).embedded_signatures
        assert (first.field_name, second.field_name) == ("Signature1", "Signature2")
        assert validate_pdf_signature(first, trust(keypair[1])).intact
        assert validate_pdf_signature(second, trust(keypair[1])).coverage == SignatureCoverageLevel.ENTIRE_FILE


def test_a_wrong_password_is_bad_certificate_and_never_repeated(
        tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    source = pdfs.text_pdf(tmp_path / "contract.pdf", 1)
    keyfile = p12_file(tmp_path / "signer.p12", *keypair)
    wrong = "hunter2-wrong-password"
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-sign", [source, keyfile], tmp_path / "out", {"password": wrong})
    assert caught.value.code == "bad_certificate"
    assert wrong not in caught.value.message and wrong not in str(caught.value) and PASSWORD not in str(caught.value)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_pkcs12_without_a_key_is_bad_certificate(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    source = pdfs.text_pdf(tmp_path / "contract.pdf", 1)
    keyfile = tmp_path / "certs-only.p12"
    keyfile.write_bytes(pkcs12.serialize_key_and_certificates(
        b"certs", None, None, [keypair[1]], serialization.BestAvailableEncryption(PASSWORD.encode())))
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-sign", [source, keyfile], tmp_path / "out", {"password": PASSWORD})
    assert caught.value.code == "bad_certificate" and "no private key" in caught.value.message


def test_an_expired_certificate_is_bad_certificate(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        sign(tmp_path, certificate(days=10, start=-20))
    assert caught.value.code == "bad_certificate" and "not today" in caught.value.message


def test_an_encrypted_pdf_is_password_protected(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    with pytest.raises(ConversionError) as caught:
        sign(tmp_path, keypair, pdfs.encrypted_pdf(tmp_path / "locked.pdf"))
    assert caught.value.code == "password_protected"


def test_inputs_in_the_wrong_order_are_refused(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    source = pdfs.text_pdf(tmp_path / "contract.pdf", 1)
    keyfile = p12_file(tmp_path / "signer.p12", *keypair)
    with pytest.raises(ConversionError) as caught:
        run_tool("pdf-sign", [keyfile, source], tmp_path / "out", {"password": PASSWORD})
    assert caught.value.code == "invalid_params" and "in this order" in caught.value.message


def test_a_visible_signature_on_a_missing_page_is_invalid_pages(
        tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    with pytest.raises(ConversionError) as caught:
        sign(tmp_path, keypair, visible=True, page=5)
    assert caught.value.code == "invalid_pages"


def test_the_password_is_a_secret_param() -> None:
    from converters.catalogue import load_catalogue

    tool = load_catalogue().get("pdf-sign")
    assert tool is not None
    params = tool.params.model_validate({"password": PASSWORD})
    assert params.public() == {"password": "***"} and PASSWORD not in repr(params)


# --------------------------------------------------------------------------- pdf-verify-signatures


def test_a_fresh_signature_is_reported_intact_and_unchanged(
        tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    report = verify(sign(tmp_path, keypair), tmp_path / "report")
    [entry] = report["signatures"]
    assert entry["fieldName"] == "Signature1" and entry["signer"] == SIGNER
    assert entry["integrity"] == "intact" and entry["coverage"] == "entireFile"
    assert entry["modifiedAfterSigning"] is False and entry["changesAfterSigning"] == "none"
    assert entry["trusted"] is False and entry["certificate"]["selfSigned"] is True
    signed_at = datetime.datetime.fromisoformat(entry["signingTime"])
    assert abs((datetime.datetime.now(datetime.UTC) - signed_at).total_seconds()) < 300


def test_an_annotation_added_after_signing_is_reported(tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    output = sign(tmp_path, keypair)
    with pymupdf.open(output) as doc:
        doc[0].add_text_annot((100, 100), "added later")
        doc.saveIncr()
    [entry] = verify(output, tmp_path / "report")["signatures"]
    assert entry["integrity"] == "intact"
    assert entry["modifiedAfterSigning"] is True and entry["coverage"] == "entireRevision"
    assert entry["changesAfterSigning"] in ("annotations", "other", "suspicious")


def test_a_byte_changed_inside_the_signed_range_breaks_integrity(
        tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    output = sign(tmp_path, keypair)
    data = bytearray(output.read_bytes())
    at = data.index(pdfs.marker(1).encode()) if pdfs.marker(1).encode() in data else data.index(b"/MediaBox")
    data[at + 2] ^= 0x01  # a byte of the first revision, well inside /ByteRange
    output.write_bytes(bytes(data))
    [entry] = verify(output, tmp_path / "report")["signatures"]
    assert entry["integrity"] == "broken"


def test_a_pdf_without_signatures_is_not_signed(tmp_path: Path) -> None:
    with pytest.raises(ConversionError) as caught:
        verify(pdfs.text_pdf(tmp_path / "plain.pdf", 1), tmp_path / "report")
    assert caught.value.code == "not_signed"


# --------------------------------------------------------------------------- through the API


def test_signing_jobs_take_the_pdf_and_the_pkcs12_and_never_keep_the_password(
        tmp_path: Path, keypair: tuple[Any, x509.Certificate]) -> None:
    from tests.conftest import start_server, upload, wait_job

    wrong = "wr0ng-pkcs12-pw-5d2e"
    data, log = tmp_path / "data", tmp_path / "server.log"
    data.mkdir()
    server = start_server(data, log)
    try:
        with server.client(server.create_key()) as client:
            pdf = upload(client, "contract.pdf", pdfs.text_pdf(tmp_path / "contract.pdf", 1).read_bytes())
            keyfile = upload(client, "me.pfx", p12_file(tmp_path / "signer.p12", *keypair).read_bytes())
            assert keyfile["format"] == "p12"
            jobs = {}
            for password in (PASSWORD, wrong):
                r = client.post("/jobs", json={"tool": "pdf-sign", "inputFileIds": [pdf["id"], keyfile["id"]],
                                               "params": {"password": password, "visible": True}})
                assert r.status_code == 201, r.text
                jobs[password] = r.json()["id"]
            good, bad = (wait_job(client, jobs[password]) for password in (PASSWORD, wrong))
            assert good["status"] == "DONE" and good["params"] == {"password": "***", "visible": True}
            assert bad["status"] == "FAILED" and bad["errorCode"] == "bad_certificate"
            assert wrong not in (bad["errorMessage"] or "") and bad["params"]["password"] == "***"
            signed = client.get(client.get(f"/jobs/{good['id']}/result").json()["downloadUrl"]).content
            (tmp_path / "signed.pdf").write_bytes(signed)
            with (tmp_path / "signed.pdf").open("rb") as f:
                [embedded] = PdfFileReader(f).embedded_signatures
                assert validate_pdf_signature(embedded, trust(keypair[1])).intact
    finally:
        server.stop()
    for path in [log, *data.rglob("*")]:
        if path.is_file():
            content = path.read_bytes()
            assert PASSWORD.encode() not in content and wrong.encode() not in content, path
