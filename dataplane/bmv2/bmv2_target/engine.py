"""The compiled packet engine (dataplane/bmv2/engine, Rust + PyO3) that executes p4c's BMv2
JSON. `make -C dataplane/bmv2 engine` (run by scripts/bootstrap.sh) builds it into
``bmv2_target/slicing_engine.abi3.so``; without it the target cannot run packets."""

from __future__ import annotations

from pathlib import Path

try:
    from .slicing_engine import Engine, Gate, Live, Packet, offer_closed_loop
except ImportError as e:  # pragma: no cover - the build is part of bootstrap
    raise ImportError(
        "the bundled target's packet engine is not built: run `make -C dataplane/bmv2 engine` "
        f"(needs cargo, the Rust toolchain): {e}"
    ) from e

COMPILED_JSON = Path(__file__).resolve().parent.parent / "compiled" / "slicing.json"

__all__ = ["COMPILED_JSON", "Engine", "Gate", "Live", "Packet", "offer_closed_loop"]
