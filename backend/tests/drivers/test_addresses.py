"""The one address check of the drivers' options (XDP agent, NetFPGA register server)."""

from __future__ import annotations

import pytest

from sliceportal.drivers.addresses import TcpAddress, UnixAddress, check_address, parse_address


@pytest.mark.parametrize(
    ("address", "unprefixed"),
    [
        ("tcp:127.0.0.1:7700", "unix"),
        ("tcp:[::1]:7700", "tcp"),
        ("tcp:localhost:1", "unix"),
        ("127.0.0.1:65535", "tcp"),
        ("unix:/run/sliceportal/x.sock", "tcp"),
        ("/tmp/sp/netfpga.sock", "unix"),
    ],
)
def test_well_formed_addresses_pass_unchanged(address: str, unprefixed: str) -> None:
    assert check_address(address, unprefixed) == address  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "unprefixed", "where"),
    [
        ("tcp:127.0.0.1:7700", "unix", TcpAddress("127.0.0.1", 7700)),
        ("tcp:[::1]:7700", "unix", TcpAddress("::1", 7700)),  # the brackets are the address's, not the host's
        ("localhost:1", "tcp", TcpAddress("localhost", 1)),
        ("unix:/run/sliceportal/x.sock", "tcp", UnixAddress("/run/sliceportal/x.sock")),
        ("/tmp/sp/netfpga.sock", "unix", UnixAddress("/tmp/sp/netfpga.sock")),
    ],
)
def test_what_a_client_connects_to_is_what_the_check_read(
    address: str, unprefixed: str, where: TcpAddress | UnixAddress
) -> None:
    assert parse_address(address, unprefixed) == where  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("address", "unprefixed", "why"),
    [
        ("tcp:127.0.0.1:0", "tcp", "port in 1..65535"),
        ("127.0.0.1:70000", "tcp", "port in 1..65535"),
        ("127.0.0.1", "tcp", "port in 1..65535"),
        ("tcp:metadata.internal:80", "unix", "must be an IP address or localhost"),
        ("/tmp/sp/netfpga.sock", "tcp", "port in 1..65535"),  # a path where TCP is the default needs unix:
        ("unix:relative.sock", "tcp", "absolute, normalised"),
        ("unix:/run/../etc/x.sock", "tcp", "absolute, normalised"),
        ("/run/sliceportal/x", "unix", "name a .sock file"),
        ("unix:/run/x\x00.sock", "tcp", "absolute, normalised"),
    ],
)
def test_malformed_addresses_say_what_is_wrong(address: str, unprefixed: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_address(address, unprefixed)  # type: ignore[arg-type]
