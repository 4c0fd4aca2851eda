"""p4runtime-shell's own ``main()``, with the two things it lacks for ``sliceportal p4rt shell``.

Runs only in its isolated virtualenv (``.tools/p4runtime-shell/bin/python -I``), never in the
workspace: it imports p4runtime-shell's ``p4`` and protobuf 3.20, not ours (ADR 0003, 0007).
The command line is p4runtime-shell's, plus:

--read-only          refuse Write, SetForwardingPipelineConfig and packet-out in the client.
                     The session joins with election id 0, below every portal session, so it
                     is a backup while the portal is connected; but PI makes the highest id it
                     holds primary, 0 too when no one else is connected, and the shell would
                     then write unaudited. A read-only session stays one whoever is connected.
--server-name NAME   the name the switch's certificate must carry when it is not the
                     address's host (a backend's ``tls_server_name``; gRPC's
                     ``ssl_target_name_override``), which p4runtime-shell 0.0.6 has no flag for.

Both reach into p4runtime-shell 0.0.6 as the lock file pins it (tools/p4runtime-shell/requirements.txt).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

import grpc
from p4runtime_sh import p4runtime, shell
from p4runtime_sh.utils import UserError


def _read_only() -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> NoReturn:
        # UserError: IPython shows its message alone, without a traceback
        raise UserError("read-only session: nothing was sent (sliceportal p4rt shell --write takes the primary role)")

    for name in ("write", "write_update", "set_fwd_pipe_config"):
        setattr(p4runtime.P4RuntimeClient, name, refuse)
    shell.PacketOut.send = refuse


def _server_name(name: str) -> None:
    secure_channel = grpc.secure_channel

    def named(target: str, credentials: Any, options: Any = None, compression: Any = None) -> Any:
        options = [*(options or ()), ("grpc.ssl_target_name_override", name)]
        return secure_channel(target, credentials, options, compression)

    grpc.secure_channel = named


def main() -> None:
    ours = argparse.ArgumentParser(add_help=False)
    ours.add_argument("--read-only", action="store_true")
    ours.add_argument("--server-name")
    args, rest = ours.parse_known_args()
    if args.read_only:
        _read_only()
    if args.server_name:
        _server_name(args.server_name)
    sys.argv = [sys.argv[0], *rest]
    shell.main()


if __name__ == "__main__":
    main()
