"""Value classes declared as dataclasses are, made without compiling any code: the read
path's (``git kb query``, ``resolve``, ``show``, ``list``).

On Python 3.11 ``@dataclass`` compiles each method it generates when the class's
module is imported (about a millisecond a class), and importing ``dataclasses`` loads
``inspect``, ``ast`` and ``tokenize``. For the dozen classes a query touches that was
a third of its start-up (``bench/query_gpu_wiki.py``). ``@value_class`` reads the same
declarations (annotated fields, defaults, ``factory(list)`` for a fresh default) and
gives each class one shared ``__init__``, ``__repr__`` and ``__eq__`` (and with
``frozen=True`` a guard on assignment, and a hash); mypy checks them as dataclasses
(``dataclass_transform``). A method the class writes itself is kept. Elsewhere gitkb's
value classes are dataclasses.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing (mypy reads it alike)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform, overload

    T = TypeVar("T")
    C = TypeVar("C", bound=type)
else:

    def dataclass_transform(**_options):
        return lambda decorator: decorator


_MISSING = object()
_FIELDS = "__value_fields__"  # class attribute: field name -> default (or _MISSING)


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def factory(make: Callable[[], T]) -> T:
    """A field's default made anew for each value (``field(default_factory=make)``)."""
    return _Factory(make)  # type: ignore[return-value]


def fields_of(cls: type) -> tuple[str, ...]:
    """The field names of a value class, its bases' first."""
    return tuple(getattr(cls, _FIELDS))


def replace(value: T, **changes: Any) -> T:
    """A copy of ``value`` with ``changes`` (field -> new value), made by its ``__init__``."""
    names = fields_of(type(value))
    unknown = sorted(set(changes) - set(names))
    if unknown:
        raise TypeError(f"{type(value).__name__} has no field {unknown[0]!r}")
    return type(value)(**{name: changes.get(name, getattr(value, name)) for name in names})


if TYPE_CHECKING:  # both spellings, ``@value_class`` and ``@value_class(frozen=True)``

    @overload
    def value_class(cls: C, /) -> C: ...

    @overload
    def value_class(*, frozen: bool = False) -> Callable[[C], C]: ...


@dataclass_transform()
def value_class(cls: C | None = None, /, *, frozen: bool = False) -> Any:
    """``@value_class`` or ``@value_class(frozen=True)`` on a class of annotated fields."""

    def make(cls: C) -> C:
        fields: dict[str, object] = {}
        for klass in reversed(cls.__mro__[1:]):
            fields.update(klass.__dict__.get(_FIELDS, {}))  # a value class base's own
        for name, note in cls.__dict__.get("__annotations__", {}).items():
            if not str(note).startswith(("ClassVar", "typing.ClassVar")):
                fields[name] = cls.__dict__.get(name, _MISSING)
        for name, default in fields.items():
            if isinstance(default, _Factory) and name in cls.__dict__:
                delattr(cls, name)  # the class keeps plain defaults, as a dataclass does
        setattr(cls, _FIELDS, fields)
        own = {
            "__init__": _init_for(cls.__name__, fields),
            "__repr__": _repr,
            "__eq__": _eq,
            "__hash__": _hash if frozen else None,
        }
        if frozen:
            own |= {"__setattr__": _frozen_setattr, "__delattr__": _frozen_delattr}
        for name, method in own.items():
            if name not in cls.__dict__:
                setattr(cls, name, method)
        return cls

    return make if cls is None else make(cls)


def _init_for(class_name: str, fields: dict[str, object]) -> Callable[..., None]:
    names = tuple(fields)
    put = object.__setattr__

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        if len(args) > len(names):
            raise TypeError(f"{class_name}() takes {len(names)} fields, {len(args)} were given")
        for name, arg in zip(names, args, strict=False):
            put(self, name, arg)
        if kwargs:
            for name in names[: len(args)]:
                if name in kwargs:
                    raise TypeError(f"{class_name}() got two values for {name!r}")
        for name in names[len(args) :]:
            if name in kwargs:
                put(self, name, kwargs.pop(name))
                continue
            default = fields[name]
            if default is _MISSING:
                raise TypeError(f"{class_name}() is missing field {name!r}")
            put(self, name, default.make() if isinstance(default, _Factory) else default)
        if kwargs:
            raise TypeError(f"{class_name}() has no field {next(iter(kwargs))!r}")

    return __init__


def _values(value: object) -> tuple:
    return tuple(getattr(value, name) for name in getattr(type(value), _FIELDS))


def _repr(self: object) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in getattr(type(self), _FIELDS))
    return f"{type(self).__name__}({shown})"


def _eq(self: object, other: object) -> bool:
    if type(other) is not type(self):
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: object) -> int:
    return hash(_values(self))


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise AttributeError(f"{type(self).__name__} is frozen: cannot assign to {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name!r}")
