"""``gitkb.valueclass``: the read path's value classes behave as the dataclasses they are
declared like (fields, defaults, fresh defaults, frozen, equality, hash, replace)."""

from __future__ import annotations

import dataclasses

import pytest

from gitkb.valueclass import factory, fields_of, replace, value_class


@value_class(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = factory(list)


@value_class
class Counter:
    name: str
    hits: int = 0


@value_class
class Named(Counter):
    label: str = "-"

    def __repr__(self) -> str:  # a method of its own is kept
        return f"<{self.name}>"


@value_class(frozen=True)
class Counted:
    name: str
    n: int


@dataclasses.dataclass(frozen=True)
class PairDC:
    name: str
    n: int


@dataclasses.dataclass(frozen=True)
class PointDC:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)


def test_fields_defaults_and_fresh_defaults():
    p = Point(1)
    assert (p.x, p.y, p.tags) == (1, 0, [])
    assert Point(1).tags is not Point(1).tags
    assert Point(2, y=3, tags=["a"]) == Point(x=2, y=3, tags=["a"])
    assert fields_of(Point) == ("x", "y", "tags")
    assert Point.y == 0 and "tags" not in Point.__dict__  # as a dataclass keeps them


def test_as_dataclasses_do():
    for args, kwargs in (((1,), {}), ((1, 2), {"tags": ["t"]}), ((), {"x": 5})):
        ours, theirs = Point(*args, **kwargs), PointDC(*args, **kwargs)
        assert repr(ours).replace("Point", "PointDC") == repr(theirs)
        assert [getattr(ours, f) for f in fields_of(Point)] == list(dataclasses.astuple(theirs))
    assert hash(Counted("a", 1)) == hash(Counted("a", 1)) == hash(PairDC("a", 1))
    assert {Counted("a", 1): 1}[Counted("a", 1)] == 1 and Point(1) != Point(2)
    assert Point(1) != PointDC(1) and Point(1) != (1, 0, [])
    with pytest.raises(TypeError):
        hash(Counter("a"))  # mutable with equality: unhashable, as a dataclass


def test_frozen_refuses_assignment_and_replace_makes_a_copy():
    p = Point(1, 2)
    with pytest.raises(AttributeError, match="frozen"):
        p.x = 3
    with pytest.raises(AttributeError, match="frozen"):
        del p.y
    q = replace(p, y=5)
    assert (q.x, q.y, p.y) == (1, 5, 2)
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(p, z=1)
    c = Counter("a")
    c.hits += 1
    assert c == Counter("a", 1)


def test_bad_calls_are_type_errors_naming_the_field():
    with pytest.raises(TypeError, match="missing field 'x'"):
        Point()
    with pytest.raises(TypeError, match="no field 'z'"):
        Point(1, z=2)
    with pytest.raises(TypeError, match="two values for 'x'"):
        Point(1, x=2)
    with pytest.raises(TypeError, match="takes 3 fields"):
        Point(1, 2, [], 4)


def test_a_subclass_adds_fields_after_its_bases_and_keeps_its_own_methods():
    n = Named("n", 2, label="L")
    assert fields_of(Named) == ("name", "hits", "label")
    assert (n.name, n.hits, n.label) == ("n", 2, "L") and repr(n) == "<n>"
    assert Named("n") == Named("n", 0, "-") and Named("n") != Counter("n")
