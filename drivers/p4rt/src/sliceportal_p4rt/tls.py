"""P4Runtime over TLS and mutual TLS: the p4rt backend's transport options and the gRPC
channel they open.

Certificates and the key are PEM text in the options, never paths: the portal refuses
options that name server files (``schemas/backends.py``), and a backend record then holds
all it needs. The client key's option ends in ``_secret``, so the portal stores it and never
shows it back (``sliceportal.core.redaction``).

Plaintext stays possible but is chosen: ``plaintext: true`` says so; left unset, plaintext
is taken only towards a loopback address (a switch on the portal's own host, as the tests
and benchmarks run it) and any ``tls_*`` option turns TLS on. A switch elsewhere without
TLS options is refused, so a typo never sends entries in clear over a network.
"""

from __future__ import annotations

import ipaddress
import re
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import grpc
from pydantic import BaseModel, Field, StringConstraints, model_validator

_CERT_BLOCK = re.compile(r"-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----")
# unencrypted only: gRPC takes no passphrase
_KEY_BLOCK = re.compile(r"-----BEGIN (RSA |EC |)PRIVATE KEY-----[A-Za-z0-9+/=\s]+-----END \1PRIVATE KEY-----")
# a chain of a few certificates (or a bundle of CAs) fits; a file of megabytes is a mistake
PemText = Annotated[str, StringConstraints(min_length=64, max_length=65536)]
ServerName = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.-]+$")]


@dataclass(frozen=True)
class Tls:
    """How a channel is secured: the CAs the server's certificate must chain to (None: the
    system's roots), the client's certificate chain and key for mutual TLS (None: no client
    certificate), and the name the server's certificate must carry when it is not the
    address's host."""

    ca_cert: bytes | None = None
    client_cert: bytes | None = None
    client_key: bytes | None = None
    server_name: str | None = None


def _credentials(tls: Tls, options: Sequence[tuple[str, Any]]) -> tuple[grpc.ChannelCredentials, list[tuple[str, Any]]]:
    creds = grpc.ssl_channel_credentials(
        root_certificates=tls.ca_cert, private_key=tls.client_key, certificate_chain=tls.client_cert
    )
    opts = list(options)
    if tls.server_name:
        opts.append(("grpc.ssl_target_name_override", tls.server_name))
    return creds, opts


def open_channel(address: str, tls: Tls | None, options: Sequence[tuple[str, Any]] = ()) -> grpc.Channel:
    """A gRPC channel to ``address``: plaintext when ``tls`` is None, else TLS as it says."""
    if tls is None:
        return grpc.insecure_channel(address, options=list(options))
    return grpc.secure_channel(address, *_credentials(tls, options))


def open_aio_channel(address: str, tls: Tls | None, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """The same as an asyncio channel (call it on the event loop that will use it)."""
    if tls is None:
        return grpc.aio.insecure_channel(address, options=list(options))
    return grpc.aio.secure_channel(address, *_credentials(tls, options))


def _certificates_error(pem: str) -> str | None:
    """Why ``pem`` is not a list of PEM certificates, or None (the text is never quoted back)."""
    if not _CERT_BLOCK.search(pem):
        return "must be PEM text (-----BEGIN CERTIFICATE-----), not a path"
    try:
        ssl.create_default_context(cadata=pem)  # parses every certificate in it
    except (ssl.SSLError, ValueError):
        return "holds a PEM block that is not a valid certificate"
    return None


def _is_loopback(address: str) -> bool:
    host = address.rpartition(":")[0].removeprefix("[").removesuffix("]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TlsOptions(BaseModel):
    """The transport options of a p4rt backend (the driver's Options inherit them)."""

    address: str
    plaintext: bool | None = Field(
        None,
        description="true: P4Runtime in clear (anyone who reaches the port reads and writes the "
        "switch); false: TLS; unset: TLS when a tls_* option is set, plaintext only to a loopback address",
    )
    tls_ca_cert: PemText | None = Field(
        None,
        description="PEM certificates of the CAs the switch's server certificate must chain to "
        "(simple_switch_grpc --grpc-server-cert); unset with TLS: the system's roots",
    )
    tls_client_cert: PemText | None = Field(
        None, description="PEM client certificate (chain) for mutual TLS (--grpc-server-with-client-auth)"
    )
    tls_client_key_secret: PemText | None = Field(
        None, description="PEM private key of tls_client_cert (a secret: stored, never shown back)"
    )
    tls_server_name: ServerName | None = Field(
        None, description="the name the server certificate must carry, when not the address's host"
    )

    @model_validator(mode="after")
    def _transport(self) -> TlsOptions:
        for name in ("tls_ca_cert", "tls_client_cert"):
            value = getattr(self, name)
            if value is not None and (why := _certificates_error(value)):
                raise ValueError(f"{name}: {why}")
        key = self.tls_client_key_secret
        if key is not None and not _KEY_BLOCK.search(key):
            raise ValueError(
                "tls_client_key_secret: must be a PEM private key (-----BEGIN PRIVATE KEY-----), "
                "unencrypted, not a path"
            )
        if (self.tls_client_cert is None) != (key is None):
            missing = "tls_client_key_secret" if key is None else "tls_client_cert"
            raise ValueError(f"{missing}: required for mutual TLS (the client certificate and its key go together)")
        given = [n for n in ("tls_ca_cert", "tls_client_cert", "tls_server_name") if getattr(self, n) is not None]
        if self.plaintext and given:
            raise ValueError(f"plaintext: true contradicts {', '.join(given)} (TLS options)")
        if self.plaintext is None and not given and not _is_loopback(self.address):
            raise ValueError(
                "plaintext: P4Runtime beyond loopback needs TLS (tls_ca_cert, and tls_client_cert / "
                "tls_client_key_secret for mutual TLS) or plaintext: true to send it in clear"
            )
        return self

    def tls(self) -> Tls | None:
        """The channel's security, or None for plaintext."""
        if self.plaintext or (
            self.plaintext is None
            and self.tls_ca_cert is None
            and self.tls_client_cert is None
            and self.tls_server_name is None
        ):
            return None
        return Tls(
            ca_cert=None if self.tls_ca_cert is None else self.tls_ca_cert.encode(),
            client_cert=None if self.tls_client_cert is None else self.tls_client_cert.encode(),
            client_key=None if self.tls_client_key_secret is None else self.tls_client_key_secret.encode(),
            server_name=self.tls_server_name,
        )
