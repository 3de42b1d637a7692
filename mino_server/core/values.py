"""eq, hash and repr of the core's dataclasses, written once.

dataclass() compiles every method it generates with exec (~40 µs each), and nearly all of the
core's ~50 dataclasses are created on every start-up path: with stock methods, making them took
~16 ms of a ~110 ms CLI cold start; with these, ~10 ms. So each is declared `@dataclass(...,
eq=False, repr=False)` on one of these two bases, whose methods behave as the generated ones do:
fields compared in order, as tuples, and only with an instance of the very same class; hashed the
same way when frozen; shown as `Name(field=value, ...)`. A frozen one is declared `@frozen` (below):
Frozen also refuses the writes dataclass(frozen=True) would compile a __setattr__ and a
__delattr__ for. tests/test_values.py holds every such class to a stock dataclass twin.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, dataclass_transform, overload


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
    """eq, hash and repr of a frozen dataclass; with `@frozen`, its refusal to be changed too."""

    def __hash__(self) -> int:
        return hash(_values(self, "hash"))

    if not TYPE_CHECKING:  # for the type checker, `@frozen` makes the fields read-only

        def __setattr__(self, name: str, value: object) -> None:
            # __init__ sets each field once; after that (or any other name) it is what
            # dataclass(frozen=True)'s own __setattr__ refuses.
            if name in self.__dict__ or name not in self.__dataclass_fields__:
                raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
            object.__setattr__(self, name, value)

        def __delattr__(self, name: str) -> None:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


_C = TypeVar("_C", bound=type)


@overload
def frozen(cls: _C, /) -> _C: ...
@overload
def frozen(*, kw_only: bool = False) -> Callable[[_C], _C]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: _C | None = None, /, *, kw_only: bool = False) -> _C | Callable[[_C], _C]:
    """`@dataclass(frozen=True, eq=False, repr=False)` for a subclass of Frozen, at half the cost:
    dataclass(frozen=True) compiles a __setattr__ and a __delattr__ for each class (two of the three
    methods it compiles with exec, ~40 µs each; the core has ~50 frozen classes, most made on every
    start-up), where Frozen's refuse the same writes for all of them."""

    def make(cls: _C) -> _C:
        if not issubclass(cls, Frozen):
            raise TypeError(f"@frozen is for subclasses of values.Frozen, not {cls.__qualname__}")
        made: Any = dataclasses.dataclass(eq=False, repr=False, kw_only=kw_only)(cls)
        if not all(f.init for f in dataclasses.fields(made)):  # __init__ must set every field once
            raise TypeError(f"@frozen classes set every field in __init__ ({cls.__qualname__})")
        return cls

    return make if cls is None else make(cls)


def _fields(value: object) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(value)  # type: ignore[arg-type]  # only dataclasses derive from the bases


def _values(value: object, use: str) -> tuple[object, ...]:
    """The values dataclass() would compare (`compare`) or hash (`hash`: compared ones unless a field says)."""
    return tuple(
        getattr(value, f.name)
        for f in _fields(value)
        if (f.compare if use == "compare" or f.hash is None else f.hash)
    )
