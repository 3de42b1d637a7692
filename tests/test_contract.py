"""contract.py's classes take eq, hash and repr from two shared bases instead of having dataclass()
compile them per class (start-up time): they must behave exactly as the generated ones would."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mino_server.core import contract

CLASSES = [
    c
    for c in vars(contract).values()
    if isinstance(c, type) and dataclasses.is_dataclass(c) and c.__module__ == contract.__name__
]


def test_every_class_is_covered() -> None:
    assert len(CLASSES) >= 20 and contract.State in CLASSES and contract.TextDelta in CLASSES


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_eq_hash_and_repr_are_the_dataclass_ones(cls: type) -> None:
    params: Any = cls.__dataclass_params__
    assert "__eq__" not in vars(cls) and "__repr__" not in vars(cls), (
        "declare it as its neighbours: @dataclass(..., eq=False, repr=False) on _Frozen or _Mutable"
    )
    names = [f.name for f in dataclasses.fields(cls)]
    values = {name: f"value of {name}" for name in names}
    one, same = cls(**values), cls(**dict(values))
    # The twin: the same fields as stock dataclass() writes them.
    twin = dataclasses.make_dataclass(cls.__name__, names, frozen=params.frozen)
    assert repr(one) == repr(twin(**values))
    assert one == same and not (one != same)
    assert one.__eq__(twin(**values)) is NotImplemented  # another class, even with the same values
    for name in names:
        other = dataclasses.replace(one, **{name: "something else"})
        assert one != other
    if params.frozen:
        assert hash(one) == hash(same) == hash(twin(**values))
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(one, names[0], "changed")
    else:
        with pytest.raises(TypeError, match="unhashable"):
            hash(one)
