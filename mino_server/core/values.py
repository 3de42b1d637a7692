"""eq, hash, repr and __init__ of the core's dataclasses, written once.

dataclass() compiles every method it generates with exec (~40 µs each), and nearly all of the
core's ~60 dataclasses are declared on every start-up path. So each is declared `@frozen` or
`@mutable` (below) on one of these two bases, whose methods behave as the generated ones do:
fields compared in order, as tuples, and only with an instance of the very same class; hashed the
same way when frozen; shown as `Name(field=value, ...)`. Frozen also refuses the writes
dataclass(frozen=True) would compile a __setattr__ and a __delattr__ for.

The one method left, __init__, is written and compiled when a class is first made, not when it is
declared: only some of these classes are made before a CLI's first request (the events of a turn,
the approval requests, most tools' results come later or never). A class without a docstring gets
`Name(field, ...)` as dataclass() would give it one, without the inspect.signature it uses for that
(~0.3 ms a class). Importing the core's modules on the CLI's start path took 46 ms with stock
dataclasses and takes ~27 (-X importtime, median of 21 runs).
tests/test_values.py holds every such class to a stock dataclass twin, __init__ included.
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
        _declare(cls, kw_only)
        if not all(f.init for f in _fields(cls)):  # __init__ must set every field once
            raise TypeError(f"@frozen classes set every field in __init__ ({cls.__qualname__})")
        return cls

    return make if cls is None else make(cls)


@overload
def mutable(cls: _C, /) -> _C: ...
@overload
def mutable(*, kw_only: bool = False) -> Callable[[_C], _C]: ...
@dataclass_transform(field_specifiers=(dataclasses.field,))
def mutable(cls: _C | None = None, /, *, kw_only: bool = False) -> _C | Callable[[_C], _C]:
    """`@dataclass(eq=False, repr=False)` for a subclass of Mutable (and not of Frozen), its
    __init__ compiled when the class is first made."""

    def make(cls: _C) -> _C:
        if not issubclass(cls, Mutable) or issubclass(cls, Frozen):
            raise TypeError(f"@mutable is for subclasses of values.Mutable, not {cls.__qualname__}")
        _declare(cls, kw_only)
        return cls

    return make if cls is None else make(cls)


def _declare(cls: type, kw_only: bool) -> None:
    """dataclass() without the __init__ it would compile now (its fields, defaults and checks are
    made as usual); the class gets a stand-in that writes the real one on the first call."""
    own_init = "__init__" in vars(cls)  # dataclass() keeps a class's own __init__: so do we
    if not cls.__doc__:
        # dataclass() would write `Name(field: type, ...)` with inspect.signature (~0.3 ms a
        # class: it parses a signature text); the same form from the class's own annotations.
        cls.__doc__ = f"{cls.__name__}({', '.join(vars(cls).get('__annotations__', ()))})"
    dataclasses.dataclass(init=own_init, eq=False, repr=False, kw_only=kw_only)(cls)
    if own_init:
        return
    defaulted = ""  # what dataclass(init=True) refuses at once: a required field after a default
    for f in _fields(cls):
        if f.init and not f.kw_only:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                defaulted = f.name
            elif defaulted:
                raise TypeError(f"non-default argument {f.name!r} follows default argument {defaulted!r}")

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        real = _install_init(cls)
        real(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.stand_in = True  # type: ignore[attr-defined]
    type.__setattr__(cls, "__init__", __init__)
    _waiting.append(cls)


_waiting: list[type] = []  # classes whose __init__ is still the stand-in (or was just written)


def _install_init(cls: type) -> Callable[..., None]:
    real = _compiled_init(cls)
    type.__setattr__(cls, "__init__", real)  # once per class; two threads may both write it: same code
    return real


def write_waiting_inits() -> None:
    """Write now the __init__ of every class declared so far that has not been made yet: for a
    thread with time to spare (a person typing), so that a first turn and a first tool call do not
    (~0.15 ms a class in a fresh process, ~2 ms over a first tool call)."""
    while _waiting:
        cls = _waiting.pop()
        if getattr(vars(cls).get("__init__"), "stand_in", False):
            _install_init(cls)


class _Factory:
    """The default of a parameter whose field has a default_factory (dataclass() uses one too)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def _init_source(cls: type) -> tuple[str, dict[str, Any]]:
    """The __init__ dataclass() would write for `cls` (its source and the names it uses): every
    field a parameter in order (kw_only ones after `*`), defaults and factories as dataclass()
    applies them, each field set with `self.name = value`, then __post_init__ if the class has one."""
    names: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in _fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            names[f"_factory_{f.name}"] = f.default_factory
            default, value = "_FACTORY", f"_factory_{f.name}() if {f.name} is _FACTORY else {f.name}"
            if not f.init:
                value = f"_factory_{f.name}()"
        elif f.default is not dataclasses.MISSING:
            names[f"_default_{f.name}"] = f.default
            default, value = f"_default_{f.name}", (f.name if f.init else f"_default_{f.name}")
        else:
            default, value = "", f.name
            if not f.init:
                continue  # no value to give it: dataclass() leaves it unset too
        if f.init:
            if f.kw_only:
                keyword.append(f"{f.name}={default}" if default else f.name)
            else:
                positional.append(f"{f.name}={default}" if default else f.name)
        body.append(f"    self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    params = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    return f"def __init__({params}):\n" + ("\n".join(body) or "    pass") + "\n", names


def _compiled_init(cls: type) -> Callable[..., None]:
    """`cls`'s __init__ (_init_source), compiled: one small exec, ~0.05 ms (a stand-in dataclass
    took ~0.2 ms, the field processing being done twice)."""
    source, names = _init_source(cls)
    exec(source, names)  # noqa: S102  # the source is made of field names only, as dataclass() does
    init: Callable[..., None] = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _fields(value: object) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(value)  # type: ignore[arg-type]  # only dataclasses derive from the bases


def _values(value: object, use: str) -> tuple[object, ...]:
    """The values dataclass() would compare (`compare`) or hash (`hash`: compared ones unless a field says)."""
    return tuple(
        getattr(value, f.name)
        for f in _fields(value)
        if (f.compare if use == "compare" or f.hash is None else f.hash)
    )
