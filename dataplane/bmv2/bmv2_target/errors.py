"""The one error type of the target: a gRPC status code and a message, as PI reports."""

from __future__ import annotations

import grpc


class P4RTError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def not_found(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.NOT_FOUND, message)


def invalid(message: str) -> P4RTError:
    return P4RTError(grpc.StatusCode.INVALID_ARGUMENT, message)
