"""eq, hash and repr of the core's dataclasses, written once.

dataclass() compiles every method it generates with exec (~40 µs each), and nearly all of the
core's ~50 dataclasses are created on every start-up path: with stock methods, making them took
~16 ms of a ~110 ms CLI cold start; with these, ~10 ms. So each is declared `@dataclass(...,
eq=False, repr=False)` on one of these two bases, whose methods behave as the generated ones do:
fields compared in order, as tuples, and only with an instance of the very same class; hashed the
same way when frozen; shown as `Name(field=value, ...)`. tests/test_values.py holds every such
class to a stock dataclass twin.
"""

from __future__ import annotations

import dataclasses
from typing import Any


class Mutable:
    """eq and repr of a dataclass; unhashable, as a dataclass with eq and without frozen is (a class
    that defines __eq__ and not __hash__ gets __hash__ = None)."""

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _values(self, "compare") == _values(other, "compare")

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in _fields(self) if f.repr)
        return f"{type(self).__qualname__}({shown})"


class Frozen(Mutable):
    """eq, hash and repr of a frozen dataclass."""

    def __hash__(self) -> int:
        return hash(_values(self, "hash"))


def _fields(value: object) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(value)  # type: ignore[arg-type]  # only dataclasses derive from the bases


def _values(value: object, use: str) -> tuple[object, ...]:
    """The values dataclass() would compare (`compare`) or hash (`hash`: compared ones unless a field says)."""
    return tuple(
        getattr(value, f.name)
        for f in _fields(value)
        if (f.compare if use == "compare" or f.hash is None else f.hash)
    )
