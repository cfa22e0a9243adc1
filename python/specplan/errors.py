"""specplan's exceptions. Every error is a specplan.Error; each subclass is also the builtin a
Python caller would catch (InvalidArgumentError is a ValueError, NotFoundError a LookupError,
ArgumentTypeError a TypeError, ...). Messages name the field and value; ``code`` is the
absl::StatusCode name."""

from ._specplan import (
    ArgumentTypeError,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnimplementedError,
)

__all__ = [
    "ArgumentTypeError", "Error", "FailedPreconditionError", "InternalError",
    "InvalidArgumentError", "NotFoundError", "PermissionDeniedError", "ResourceExhaustedError",
    "UnimplementedError",
]
