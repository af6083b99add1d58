"""The exceptions neardup raises: one small tree under :class:`NeardupError`.

The compiled core (``neardup._core``) raises these same classes, so ``except
neardup.NeardupError`` catches everything neardup itself reports. Where a plain
Python exception would be natural the class also subclasses it, so code that
expects ``ValueError`` or ``TypeError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "NeardupError",
    "InvalidParameterError",
    "InvalidInputError",
    "InputTypeError",
    "InternalError",
]


class NeardupError(Exception):
    """Base class of every error neardup raises."""


class InvalidParameterError(NeardupError, ValueError):
    """A configuration value is out of range or unknown (k <= 0, an unknown scheme, ...)."""


class InvalidInputError(NeardupError, ValueError):
    """An input item has the right type but cannot be used (e.g. a lone surrogate).

    ``index`` is the position of the offending item in the batch, or ``None`` for a
    single item.
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index

    def __reduce__(self):  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.index))


class InputTypeError(NeardupError, TypeError):
    """An input item has the wrong type (``None`` or ``bytes`` where ``str`` was expected).

    ``index`` is the position of the offending item in the batch, or ``None``.
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index

    def __reduce__(self):  # pickled whole (the service's writer process sends errors back)
        return (type(self), (str(self), self.index))


class InternalError(NeardupError, RuntimeError):
    """A bug inside neardup's compiled core (a Rust panic, caught and reported).

    The process keeps running; please report the message.
    """
