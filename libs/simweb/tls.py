"""A self-signed certificate for the simulated web's HTTPS port, made on the spot.

No certificate authority signed it, so a crawler that verifies certificates (as
it must) fails the TLS handshake: that is the point. It is made with the
``cryptography`` package when installed, else with the ``openssl`` command.
"""

from __future__ import annotations

import logging
import shutil
import ssl
import subprocess
from pathlib import Path

logger = logging.getLogger(__name__)

__all__ = ["self_signed_context"]


def self_signed_context(folder: str | Path, common_name: str = "tls.hostile.test") -> ssl.SSLContext:
    """A server TLS context with a fresh self-signed certificate (key and certificate written in ``folder``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key, cert = folder / "simweb-key.pem", folder / "simweb-cert.pem"
    try:
        _with_cryptography(key, cert, common_name)
    except ModuleNotFoundError:
        _with_openssl(key, cert, common_name)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    return context


def _with_cryptography(key_path: Path, cert_path: Path, common_name: str) -> None:
    import datetime
    import importlib

    # Imported by name: the package is optional (the openssl command is the fallback).
    x509 = importlib.import_module("cryptography.x509")
    hashes = importlib.import_module("cryptography.hazmat.primitives.hashes")
    serialization = importlib.import_module("cryptography.hazmat.primitives.serialization")
    ec = importlib.import_module("cryptography.hazmat.primitives.asymmetric.ec")
    oid = importlib.import_module("cryptography.x509.oid")

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _with_openssl(key_path: Path, cert_path: Path, common_name: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("neither the cryptography package nor the openssl command is available")
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-days", "2", "-subj", f"/CN={common_name}", "-addext", f"subjectAltName=DNS:{common_name}",
         "-keyout", str(key_path), "-out", str(cert_path)],
        check=True, capture_output=True,
    )
