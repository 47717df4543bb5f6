"""Every plugin family has one shape: a registry of one line per entry, naming a module
that holds what the family's Protocol says. Every registered entry meets it."""

from __future__ import annotations

import importlib
import inspect

import pytest

from gitkb.gates import Gate
from gitkb.gates.registry import GATE_MODULES, GateModule
from gitkb.importers import IMPORTERS, ImporterModule
from gitkb.mine import distill
from gitkb.mine.distill import DistillerModule
from gitkb.optimize import profilers, providers
from gitkb.optimize.profilers import ProfilerModule
from gitkb.optimize.providers import ProviderModule

FAMILIES = [
    *((GateModule, f"gitkb.gates.{m}") for m in GATE_MODULES),
    *((ProviderModule, path) for path in providers.REGISTRY.values()),
    *((ProfilerModule, path) for path in profilers.REGISTRY.values()),
    *((ImporterModule, f"gitkb.importers.{m}") for m in IMPORTERS.values()),
    *((DistillerModule, path) for path in distill.REGISTRY.values()),
]


def _parameters(function) -> list[str]:
    return [p for p in inspect.signature(function).parameters if p != "self"]


@pytest.mark.parametrize("protocol, path", FAMILIES, ids=[path for _, path in FAMILIES])
def test_every_registered_entry_meets_its_family_protocol(protocol, path):
    module = importlib.import_module(path)
    assert isinstance(module, protocol), f"{path} lacks what {protocol.__name__} names"
    for name, declared in vars(protocol).items():
        if not name.startswith("_") and inspect.isfunction(declared):  # same arguments
            assert _parameters(getattr(module, name)) == _parameters(declared), (path, name)
    if protocol is GateModule:
        assert isinstance(module.GATE, Gate)
    if protocol is ProviderModule:
        assert issubclass(module.Provider, providers.Provider)
        assert module.Provider.name in providers.REGISTRY


def test_a_module_without_the_entry_point_does_not_meet_the_protocol():
    assert not isinstance(importlib.import_module("gitkb.gates.registry"), GateModule)
    assert not isinstance(importlib.import_module("gitkb.importers"), ProfilerModule)
    assert not isinstance(importlib.import_module("gitkb.mine.distill.external"), DistillerModule)
