"""Certificates for P4Runtime over mutual TLS between the testbed's portal and its P4 plane.

A throw-away CA, a server certificate for the switch (``127.0.0.1`` and ``localhost``) and a
client certificate for the portal, all issued at the testbed's start with the ``openssl``
command line (EC P-256, valid for a week) into a directory of their own, created private
(``mkdtemp``: 0700) under the run directory. The CA's key never leaves that directory and
nothing else is signed with it, so the switch accepts only the client certificate issued
beside it. Tests use the same to start switches with ``--grpc-server-with-client-auth``.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sliceportal_testbed.processes import run_dir

DAYS = 7
_CURVE = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]


class CertificateError(RuntimeError):
    """openssl is missing or refused to issue a certificate; the message holds its output."""


@dataclass(frozen=True)
class P4RuntimeCerts:
    """The files of one issue: the CA, the switch's server pair and the portal's client pair."""

    directory: Path
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_args(self, client_auth: bool = True) -> list[str]:
        """The flags simple_switch_grpc (after its ``--``) and the bundled target take."""
        args = [
            "--grpc-server-ssl",
            "--grpc-server-cert",
            str(self.server_cert),
            "--grpc-server-key",
            str(self.server_key),
            "--grpc-server-cacert",
            str(self.ca_cert),
        ]
        return [*args, "--grpc-server-with-client-auth"] if client_auth else args

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def client_options(self) -> dict[str, str]:
        """The p4rt backend options of a client that the switch accepts (PEM text, the key a secret)."""
        return {
            "tls_ca_cert": self.ca_cert.read_text(),
            "tls_client_cert": self.client_cert.read_text(),
            "tls_client_key_secret": self.client_key.read_text(),
        }


def _openssl(args: list[str], cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise CertificateError("openssl is not on PATH (scripts/bootstrap.sh installs it)")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise CertificateError(f"openssl {args[0]} failed: {done.stderr.strip()[-400:]}")


def _leaf(d: Path, name: str, subject: str, extensions: str) -> None:
    (d / f"{name}.ext").write_text(extensions)
    _openssl(["req", "-new", *_CURVE, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject], d)
    _openssl(
        [
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            str(DAYS),
            "-out",
            f"{name}.crt",
            "-extfile",
            f"{name}.ext",
        ],
        d,
    )


def issue_p4runtime_certs(parent: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> P4RuntimeCerts:
    """A fresh CA with a server certificate for ``hosts`` and one client certificate, in a new
    private directory under ``parent``."""
    d = Path(tempfile.mkdtemp(prefix="p4rt-tls-", dir=parent))
    _openssl(
        [
            "req",
            "-x509",
            *_CURVE,
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            str(DAYS),
            "-subj",
            "/CN=sliceportal P4Runtime CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
        d,
    )
    names = ",".join(f"IP:{h}" if h[:1].isdigit() or ":" in h else f"DNS:{h}" for h in hosts)
    _leaf(
        d,
        "server",
        "/CN=sliceportal P4Runtime switch",
        f"basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        f"subjectAltName={names}\n",
    )
    _leaf(
        d,
        "client",
        "/CN=sliceportal P4Runtime client",
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n",
    )
    return P4RuntimeCerts(d, d / "ca.crt", d / "server.crt", d / "server.key", d / "client.crt", d / "client.key")


def testbed_certs(prefix: str) -> P4RuntimeCerts:
    """The certificates of one testbed run, under its run directory (``remove`` at its stop)."""
    return issue_p4runtime_certs(run_dir(prefix))
