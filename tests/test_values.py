"""The core's dataclasses take eq, hash and repr from core/values.py's two bases instead of having
dataclass() compile them for each class (start-up time): they behave exactly as the generated ones."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from typing import Any

import pytest

import mino_server.core
from mino_server.core.values import Frozen, Mutable


def _core_dataclasses() -> list[type]:
    names = ["mino_server.cli"] + [
        m.name for m in pkgutil.walk_packages(mino_server.core.__path__, "mino_server.core.")
    ]
    found = []
    for name in names:
        module = importlib.import_module(name)
        found += [
            c
            for c in vars(module).values()
            if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == name
        ]
    return found


CLASSES = _core_dataclasses()


def test_every_core_dataclass_is_covered() -> None:
    names = {c.__name__ for c in CLASSES}
    assert len(CLASSES) >= 45 and {"State", "TextDelta", "Target", "Turn", "ToolContext"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_eq_hash_and_repr_are_the_dataclass_ones(cls: type) -> None:
    params: Any = cls.__dataclass_params__
    assert "__eq__" not in vars(cls) and "__repr__" not in vars(cls), (
        "declare it as the others: @dataclass(..., eq=False, repr=False) on values.Frozen or values.Mutable"
    )
    # frozen: a Frozen subclass declared @frozen (Frozen refuses the writes) or, as before,
    # @dataclass(frozen=True, ...) (its own compiled methods do).
    frozen = issubclass(cls, Frozen)
    assert issubclass(cls, Mutable) and (params.frozen or not frozen or "__setattr__" not in vars(cls))
    assert not params.frozen or frozen
    fields = dataclasses.fields(cls)
    values = {f.name: f"value of {f.name}" for f in fields}
    one, same = cls(**values), cls(**dict(values))
    # The twin: the same fields as a stock dataclass() writes them.
    twin = dataclasses.make_dataclass(
        cls.__name__,
        [(f.name, Any, dataclasses.field(repr=f.repr, hash=f.hash, compare=f.compare)) for f in fields],
        frozen=frozen,
    )
    twin.__qualname__ = cls.__qualname__
    assert repr(one) == repr(twin(**values))
    assert one == same and not (one != same)
    assert one.__eq__(twin(**values)) is NotImplemented  # another class, even with the same values
    for f in fields:
        other = dataclasses.replace(one, **{f.name: "something else"})
        assert (one == other) != f.compare
    if frozen:
        assert hash(one) == hash(same) == hash(twin(**values))
        for name in (fields[0].name, fields[-1].name, "not_a_field"):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(one, name, "changed")
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(one, fields[0].name)
        assert repr(one) == repr(twin(**values))  # nothing changed
    else:
        with pytest.raises(TypeError, match="unhashable"):
            hash(one)


def test_frozen_refuses_what_it_cannot_make_read_only() -> None:
    from mino_server.core.values import Mutable, frozen

    with pytest.raises(TypeError, match="subclasses of values.Frozen"):

        @frozen
        class NotFrozen(Mutable):
            a: int

    with pytest.raises(TypeError, match="set every field"):

        @frozen
        class Later(Frozen):
            a: int = dataclasses.field(init=False, default=0)


def _stock_twin(cls: type) -> Any:
    """A stock dataclass with `cls`'s fields as they are declared (defaults, factories, init, kw_only)."""
    spec = []
    for f in dataclasses.fields(cls):
        options: dict[str, Any] = {"init": f.init, "kw_only": f.kw_only}
        if f.default is not dataclasses.MISSING:
            options["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            options["default_factory"] = f.default_factory
        spec.append((f.name, Any, dataclasses.field(**options)))
    return dataclasses.make_dataclass(cls.__name__, spec)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_init_is_the_one_dataclass_writes(cls: type) -> None:
    """The __init__ written on first use takes the parameters a stock dataclass() __init__ takes
    (names, order, kinds, which have defaults) and leaves an object with the same values."""
    from mino_server.core.values import _compiled_init

    twin = _stock_twin(cls)
    ours = inspect.signature(_compiled_init(cls)).parameters
    stock = inspect.signature(twin.__init__).parameters
    assert [(p.name, p.kind, p.default is p.empty) for p in ours.values()] == [
        (p.name, p.kind, p.default is p.empty) for p in stock.values()
    ]
    required = {
        p.name: f"value of {p.name}" for p in stock.values() if p.name != "self" and p.default is p.empty
    }
    one, other = cls(**required), twin(**required)
    for f in dataclasses.fields(cls):
        if f.default_factory is dataclasses.MISSING:
            assert getattr(one, f.name) == getattr(other, f.name), f.name
        else:  # the factory's value (an Event is equal only to itself), a fresh one for each object
            assert type(getattr(one, f.name)) is type(getattr(other, f.name)), f.name
            assert getattr(one, f.name) is not getattr(cls(**required), f.name)


def test_init_is_written_on_first_use_and_behaves_as_dataclass_init() -> None:
    from mino_server.core.values import Frozen, Mutable, frozen, mutable

    seen: list[str] = []

    @mutable(kw_only=True)
    class Later(Mutable):
        a: int
        b: list[int] = dataclasses.field(default_factory=list)
        c: str = dataclasses.field(init=False, default="set")
        d: dict[str, int] = dataclasses.field(init=False, default_factory=dict)

        def __post_init__(self) -> None:
            seen.append(f"{self.a} {self.b} {self.c} {self.d}")

    stand_in = Later.__init__
    assert "a" not in inspect.signature(stand_in).parameters  # nothing written yet
    one = Later(a=1)
    assert Later.__init__ is not stand_in and one.b == [] and one.b is not Later(a=2).b
    assert seen == ["1 [] set {}", "2 [] set {}"]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'a'"):
        Later()
    with pytest.raises(TypeError, match="positional"):
        Later(1)  # type: ignore[misc]

    @frozen
    class Point(Frozen):
        x: int
        y: int = 0

    assert Point(3) == Point(x=3, y=0) and Point(1, 2).y == 2
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]

    @mutable
    class Own(Mutable):
        a: int

        def __init__(self, text: str) -> None:  # a class's own __init__ is kept, as dataclass() keeps it
            self.a = len(text)

    assert Own("abc").a == 3

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument 'a'"):

        @mutable
        class Wrong(Mutable):  # refused when declared, as dataclass() refuses it
            a: int = 0
            b: int


def test_waiting_inits_are_written_ahead_when_asked() -> None:
    """The warm-up thread writes the __init__ of every class not made yet (values.write_waiting_inits)."""
    from mino_server.core.values import Frozen, frozen, write_waiting_inits

    @frozen
    class Ahead(Frozen):
        a: int
        b: str = "b"

    assert getattr(vars(Ahead)["__init__"], "stand_in", False)
    write_waiting_inits()
    assert not getattr(vars(Ahead)["__init__"], "stand_in", False)
    assert list(inspect.signature(Ahead.__init__).parameters) == ["self", "a", "b"]
    assert Ahead(1) == Ahead(a=1, b="b")
