"""P4Runtime over mutual TLS (#27): a switch started with client authentication answers only
a client holding a certificate of its CA; with one the driver pushes and reads back. The same
against the real simple_switch_grpc (``--grpc-server-ssl --grpc-server-with-client-auth``),
the oracle of what the bundled target must do.

Certificates are issued by the testbed's own issuer (openssl), as the testbed's P4 plane gets them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from irs import two_tenants
from p4.v1 import p4runtime_pb2

from sliceportal.core.redaction import REDACTED, redact_options
from sliceportal.drivers.contract import OptionsError, UnreachableError
from sliceportal_p4rt.client import read_once
from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.p4info import CLASSIFIER
from sliceportal_p4rt.simple_switch import ServerTls, start_simple_switch_grpc
from sliceportal_p4rt.tls import Tls
from sliceportal_testbed.tls import P4RuntimeCerts, issue_p4runtime_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> P4RuntimeCerts:
    return issue_p4runtime_certs(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> P4RuntimeCerts:
    """Another CA, and a client certificate it signed: well-formed, but not the switch's."""
    return issue_p4runtime_certs(tmp_path_factory.mktemp("other-pki"))


def _tls(ca: Path, cert: Path | None = None, key: Path | None = None) -> Tls:
    return Tls(ca.read_bytes(), None if cert is None else cert.read_bytes(), None if key is None else key.read_bytes())


def _classifier_read(driver: Driver) -> list[p4runtime_pb2.Entity]:
    e = p4runtime_pb2.Entity()
    e.table_entry.table_id = driver.p4info.table(CLASSIFIER).preamble.id
    return [e]


def assert_only_its_clients_get_in(address: str, certs: P4RuntimeCerts, stranger: P4RuntimeCerts) -> None:
    """The attacker's reads (a local user's: plaintext, TLS without a certificate, a certificate of
    another CA) are refused; the driver with the backend's certificate pushes and reads back."""
    probe = Driver({})
    read = _classifier_read(probe)
    for name, tls in (
        ("plaintext", None),
        ("no client certificate", _tls(certs.ca_cert)),
        ("another CA's client", _tls(certs.ca_cert, stranger.client_cert, stranger.client_key)),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            read_once(address, 1, read, timeout_s=5, tls=tls)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, name
    # the driver without the client certificate says why, naming the options to set
    bare = Driver({"address": address, "timeout_s": 2, "tls_ca_cert": certs.ca_cert.read_text()})
    with pytest.raises(UnreachableError, match="did not accept this client's certificate") as why:
        bare.read_state()
    assert "tls_client_cert" in why.value.hint
    # a client that trusts another CA refuses the switch itself
    wrong_ca = Driver(
        {"address": address, "timeout_s": 2, **certs.client_options(), "tls_ca_cert": stranger.ca_cert.read_text()}
    )
    with pytest.raises(UnreachableError, match="TLS handshake failed"):
        wrong_ca.read_state()

    d = Driver({"address": address, "timeout_s": 10, "lanes": 8, **certs.client_options()})
    try:
        ir = two_tenants()
        plan = d.lower(ir)
        d.apply(plan, lambda _: None)
        state = d.read_state()
        assert state.tables == plan.tables and state.version == ir.digest()
        # and a sessionless read with the certificate sees the entries the attacker could not
        held = read_once(address, 1, read, timeout_s=5, tls=_tls(certs.ca_cert, certs.client_cert, certs.client_key))
        assert len(held) == sum(1 for e in plan.tables[CLASSIFIER] if not e.get("default"))
    finally:
        d.close()


def test_the_bundled_target_with_client_auth_answers_only_its_clients(
    start_target: Callable[..., object], certs: P4RuntimeCerts, stranger: P4RuntimeCerts
) -> None:
    target = start_target("--priority-queues", "8", *certs.server_args(client_auth=True))
    assert_only_its_clients_get_in(target.address, certs, stranger)  # type: ignore[attr-defined]


@pytest.fixture
def tls_bmv2(certs: P4RuntimeCerts) -> Iterator[str]:
    server = ServerTls(certs.server_cert, certs.server_key, certs.ca_cert, client_auth=True)
    with start_simple_switch_grpc(
        priority_queues=8, server_tls=server, client_tls=_tls(certs.ca_cert, certs.client_cert, certs.client_key)
    ) as switch:
        yield switch.address


@pytest.mark.needs_bmv2
def test_simple_switch_grpc_with_client_auth_answers_only_its_clients(
    tls_bmv2: str, certs: P4RuntimeCerts, stranger: P4RuntimeCerts
) -> None:
    assert_only_its_clients_get_in(tls_bmv2, certs, stranger)


def test_the_bundled_target_refuses_certificate_flags_without_tls(certs: P4RuntimeCerts) -> None:
    from bmv2_target.__main__ import main

    for argv in (
        ["--grpc-server-with-client-auth"],
        ["--grpc-server-cert", str(certs.server_cert)],
        ["--grpc-server-ssl", "--grpc-server-cert", str(certs.server_cert)],  # no key
        ["--grpc-server-ssl", *certs.server_args(client_auth=True)[1:5], "--grpc-server-with-client-auth"],
    ):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2, argv


# ---- options ------------------------------------------------------------------------------


def test_plaintext_is_a_choice_beyond_loopback(certs: P4RuntimeCerts) -> None:
    with pytest.raises(OptionsError, match="plaintext: P4Runtime beyond loopback needs TLS"):
        Driver({"address": "192.0.2.7:9559"})
    assert Driver({"address": "192.0.2.7:9559", "plaintext": True}).opts.tls() is None
    assert Driver({"address": "127.0.0.1:9559"}).opts.tls() is None  # the host's own switch, as the tests run it
    tls = Driver({"address": "192.0.2.7:9559", **certs.client_options(), "tls_server_name": "localhost"}).opts.tls()
    assert tls is not None and tls.client_key == certs.client_key.read_bytes() and tls.server_name == "localhost"
    # TLS with the system's roots: no CA option, plaintext said false
    assert Driver({"address": "192.0.2.7:9559", "plaintext": False}).opts.tls() == Tls()


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"plaintext": True, "tls_ca_cert": "ca"}, "plaintext: true contradicts tls_ca_cert"),
        ({"tls_client_cert": "cert"}, "tls_client_key_secret: required"),
        ({"tls_client_key_secret": "key"}, "tls_client_cert: required"),
        ({"tls_ca_cert": "/etc/ssl/certs/ca-certificates.crt" + " " * 40}, "tls_ca_cert: must be PEM text"),
        (
            {"tls_ca_cert": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----" + "\n" * 20},
            "tls_ca_cert: holds a PEM block that is not a valid certificate",
        ),
        (
            {
                "tls_client_cert": "cert",
                "tls_client_key_secret": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nQUJD\n"
                "-----END ENCRYPTED PRIVATE KEY-----" + "\n" * 20,
            },
            "tls_client_key_secret: must be a PEM private key",
        ),
        ({"tls_server_name": "a/b"}, "tls_server_name"),
    ],
)
def test_bad_tls_options_are_refused_naming_the_field_never_the_value(
    certs: P4RuntimeCerts, options: dict[str, str], field: str
) -> None:
    pem = {"ca": certs.ca_cert.read_text(), "cert": certs.client_cert.read_text(), "key": certs.client_key.read_text()}
    options = {k: pem.get(v, v) for k, v in options.items()}
    with pytest.raises(OptionsError, match=field) as refused:
        Driver({"address": "127.0.0.1:9559", **options})
    # what was given: a PEM's first base64 line, or the text itself
    given = [v.splitlines()[1] if v.startswith("-----") else v.strip() for v in options.values() if isinstance(v, str)]
    assert not any(g in str(refused.value) for g in given)


def test_the_client_key_is_a_secret_the_portal_never_shows(certs: P4RuntimeCerts) -> None:
    shown = redact_options({"address": "127.0.0.1:9559", **certs.client_options()})
    assert shown["tls_client_key_secret"] == REDACTED
    assert shown["tls_client_cert"].startswith("-----BEGIN CERTIFICATE-----")  # certificates are public
