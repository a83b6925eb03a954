"""Plain records: classes with `__slots__` that compare and print like dataclasses.

Making a dataclass compiles its methods when its module is imported: about 3.5M
instructions each, and a headless replay imported 29 of them before reading a byte
(a third of what it ran on a 200-byte stream). A record's class writes its own
`__init__` and lists its fields, in order, in `__slots__`; from them it gets what
a dataclass gave: == between two of the same class, field by field; a repr naming
each field; and, for `FrozenRecord`, a hash of the fields (frozen by convention:
nothing assigns to one after `__init__`)."""

from __future__ import annotations

from typing import Any, ClassVar


class Record:
    """Compared by value, so unhashable (defining __eq__ does that), as a dataclass
    that is not frozen."""

    __slots__ = ()
    # The fields that == and repr look at, where they are not all of `__slots__`
    compared: ClassVar[tuple[str, ...] | None] = None

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def _names(self) -> tuple[str, ...]:
        cls = type(self)
        return cls.compared if cls.compared is not None else cls.__slots__

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names())
        return f"{type(self).__qualname__}({shown})"


class FrozenRecord(Record):
    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())
