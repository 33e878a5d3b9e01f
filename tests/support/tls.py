"""A self-signed certificate for 127.0.0.1, made with openssl, for the test
servers that speak TLS (nginx in front of HAICO, a model provider)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def openssl_missing() -> str | None:
    """Why no certificate can be made here (None when one can)."""
    return None if shutil.which("openssl") else "openssl is not installed"


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) in `directory`, valid two days for 127.0.0.1; the
    certificate is its own authority, so a client trusts it only when told to."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key
