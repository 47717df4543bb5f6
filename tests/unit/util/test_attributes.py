"""A value's attributes as a JSON object, in the order named, some under other keys."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gitkb.gates import Finding
from gitkb.util.attributes import attributes


@dataclass
class Run:
    name: str
    commit: str | None = None

    @property
    def short(self) -> str:
        return (self.commit or "")[:7]


def test_fields_and_properties_in_the_order_named_under_their_keys():
    run = Run("softmax", "0123456789abcdef")
    document = attributes(run, "short name store_commit=commit")
    assert list(document.items()) == [
        ("short", "0123456"),
        ("name", "softmax"),
        ("store_commit", "0123456789abcdef"),
    ]


def test_a_name_that_is_not_an_attribute_is_an_error():
    with pytest.raises(AttributeError):
        attributes(Run("x"), "name commit=sha")


def test_a_finding_keeps_its_json_keys():
    finding = Finding("kb-1", "schema", "missing", "scope.arch")
    assert list(finding.as_json().items()) == [
        ("record", "kb-1"), ("gate", "schema"), ("field", "scope.arch"), ("message", "missing"),
    ]  # fmt: skip
