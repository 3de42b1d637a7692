"""The core's dataclasses take eq, hash and repr from core/values.py's two bases instead of having
dataclass() compile them for each class (start-up time): they behave exactly as the generated ones."""

from __future__ import annotations

import dataclasses
import importlib
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
