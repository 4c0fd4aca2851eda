"""TLS and client authentication of the target's gRPC server, with simple_switch_grpc's flags.

``--grpc-server-ssl`` serves TLS with ``--grpc-server-cert`` / ``--grpc-server-key``;
``--grpc-server-with-client-auth`` also requires a client certificate that chains to
``--grpc-server-cacert``. Every service of the server (P4Runtime, the Dataplane pcap replay,
the Live ports' control) is then behind the same handshake. Without ``--grpc-server-ssl`` the
server is plaintext on loopback: anyone on the host reaches it (docs/security.md).

Where simple_switch_grpc ignores a certificate flag given without ``--grpc-server-ssl``, the
target refuses it: a command line that asks for TLS and would get plaintext is a mistake.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import grpc


def add_tls_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--grpc-server-ssl", action="store_true", help="serve gRPC over TLS")
    ap.add_argument(
        "--grpc-server-cacert",
        type=Path,
        default=None,
        metavar="PEM",
        help="CA certificate(s) a client certificate must chain to",
    )
    ap.add_argument("--grpc-server-cert", type=Path, default=None, metavar="PEM", help="server certificate (chain)")
    ap.add_argument("--grpc-server-key", type=Path, default=None, metavar="PEM", help="server private key")
    ap.add_argument(
        "--grpc-server-with-client-auth",
        action="store_true",
        help="require a client certificate signed by --grpc-server-cacert (mutual TLS)",
    )


def server_credentials(args: argparse.Namespace) -> grpc.ServerCredentials | None:
    """The server's TLS credentials from the parsed flags, None for plaintext; ValueError
    naming the flag when they do not fit together."""
    files = {
        "--grpc-server-cacert": args.grpc_server_cacert,
        "--grpc-server-cert": args.grpc_server_cert,
        "--grpc-server-key": args.grpc_server_key,
    }
    if not args.grpc_server_ssl:
        given = [flag for flag, path in files.items() if path is not None]
        if args.grpc_server_with_client_auth:
            given.append("--grpc-server-with-client-auth")
        if given:
            raise ValueError(f"{', '.join(given)} without --grpc-server-ssl would serve plaintext")
        return None
    for flag in ("--grpc-server-cert", "--grpc-server-key"):
        if files[flag] is None:
            raise ValueError(f"--grpc-server-ssl needs {flag}")
    if args.grpc_server_with_client_auth and args.grpc_server_cacert is None:
        raise ValueError(
            "--grpc-server-with-client-auth needs --grpc-server-cacert (what client certificates must chain to)"
        )
    try:
        pem = {flag: None if path is None else path.read_bytes() for flag, path in files.items()}
    except OSError as e:
        raise ValueError(f"cannot read {e.filename}: {e.strerror}") from None
    cert, key = pem["--grpc-server-cert"], pem["--grpc-server-key"]
    assert cert is not None and key is not None
    return grpc.ssl_server_credentials(
        [(key, cert)],
        root_certificates=pem["--grpc-server-cacert"],
        require_client_auth=bool(args.grpc_server_with_client_auth),
    )
