"""One registry type for every extension kind: names to plug-ins, duplicates refused, unknown names listed.

Modes, model sources, scripted policies, scripted approvers, provider profiles and executors each keep one
``Registry``: ``@REGISTRY.register("name")`` (or ``REGISTRY.add("name", item)``) puts a plug-in in, ``REGISTRY[name]``
takes it out, and a name nobody registered fails with one line listing the known ones, sorted. Iteration and
``names()`` keep registration order (the order ``--help`` shows); ``describe()`` gives the rows ``bench list`` prints.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, overload

from harness.errors import UnknownNameError

T = TypeVar("T")
D = TypeVar("D")


def first_sentence(item: object) -> str:
    """The first sentence of a plug-in's docstring: what ``describe()`` shows without a summary of its own."""
    doc = inspect.getdoc(item) if callable(item) or inspect.isclass(item) else None
    paragraph = " ".join(doc.strip().split("\n\n")[0].split()) if doc else ""
    sentence, dot, _ = paragraph.partition(". ")
    return sentence + dot.strip() if dot else paragraph


class Registry(Mapping[str, T]):
    """Plug-ins of one kind by name, in registration order.

    ``kind`` is what an error calls one of them ("mode", "scripted policy"). ``named``: registering also sets the
    plug-in's ``name`` attribute, so a class knows the name it was registered under. ``summary`` gives a plug-in's
    one-line description for ``describe()`` (default: the first line of its docstring).
    """

    def __init__(self, kind: str, *, named: bool = False, summary: Callable[[T], str] = first_sentence) -> None:
        self.kind = kind
        self._named = named
        self._summary = summary
        self._items: dict[str, T] = {}

    def add(self, name: str, item: T) -> T:
        """Registers ``item`` under ``name``; a name registered twice is a programming error, raised at import."""
        if name in self._items:
            raise ValueError(f"{self.kind} '{name}' registered twice")
        if self._named:
            setattr(item, "name", name)  # noqa: B010  (a plug-in class declares ``name``; typed as T here)
        self._items[name] = item
        return item

    def register(self, name: str) -> Callable[[T], T]:
        """A decorator: ``@REGISTRY.register("name")`` adds the class or function it decorates, unchanged."""
        return lambda item: self.add(name, item)

    def remove(self, name: str) -> None:
        """Takes a plug-in out again (a test's throwaway one); a name not registered is ignored."""
        self._items.pop(name, None)

    def unknown(self, name: str, *, also: tuple[str, ...] = ()) -> UnknownNameError:
        """The error for a name nobody registered: one line, the known names sorted (``also``: names that select
        something else, such as ``auto``)."""
        return UnknownNameError(self.kind, name, [*also, *self._items])

    def names(self) -> tuple[str, ...]:
        return tuple(self._items)

    def describe(self) -> list[tuple[str, str]]:
        """(name, one-line summary) of each plug-in, in registration order: ``bench list`` and help read these."""
        return [(name, self._summary(item)) for name, item in self._items.items()]

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise self.unknown(name) from None

    @overload
    def get(self, name: str, /) -> T | None: ...
    @overload
    def get(self, name: str, /, default: T | D) -> T | D: ...
    def get(self, name: str, default: Any = None) -> Any:
        return self._items.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._items)})"
