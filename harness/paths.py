"""Dotted paths into store artifacts and action arguments: the one small language conditions and oracle checks share.

``order.amount`` walks mapping keys (a digit walks a list index); a segment ending in ``[]``
(``claims[].doc_id``) fans out over every item of a list.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

PATH_PATTERN = r"^[A-Za-z0-9_-]+(\[\])?(\.[A-Za-z0-9_-]+(\[\])?)*$"
_PATH = re.compile(PATH_PATTERN)


class Missing:
    """What a path yields where the data has nothing: distinct from a stored ``None``."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING = Missing()


def valid_path(path: str) -> bool:
    return bool(_PATH.match(path))


def head(path: str) -> str:
    """The first key of a path: the artifact or the top-level argument it starts from."""
    return path.split(".", 1)[0].removesuffix("[]")


def lookup(data: Any, path: str) -> Any:
    """The single value at a path without fan-out, or ``MISSING``."""
    values = list(collect(data, path.replace("[]", "")))
    return values[0] if values else MISSING


def collect(data: Any, path: str) -> Iterator[Any]:
    """Every value a path reaches; ``MISSING`` marks each place where a step found nothing."""
    yield from _walk(data, path.split("."))


def _walk(data: Any, segments: list[str]) -> Iterator[Any]:
    if not segments:
        yield data
        return
    segment, rest = segments[0], segments[1:]
    fan_out = segment.endswith("[]")
    value = _step(data, segment.removesuffix("[]"))
    if value is MISSING:
        yield MISSING
    elif fan_out:
        if not isinstance(value, list):
            yield MISSING
            return
        if not value:
            return
        for item in value:
            yield from _walk(item, rest)
    else:
        yield from _walk(value, rest)


def _step(data: Any, key: str) -> Any:
    if isinstance(data, dict):
        return data.get(key, MISSING)
    if isinstance(data, list) and key.isdigit() and int(key) < len(data):
        return data[int(key)]
    return MISSING


def field_names(data: Any) -> Iterator[str]:
    """Every mapping key anywhere in a JSON-like value, depth first, in order."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from field_names(value)
    elif isinstance(data, list):
        for item in data:
            yield from field_names(item)


def field_values(data: Any, name: str) -> Iterator[Any]:
    """Every value stored under the key ``name`` anywhere in a JSON-like value, depth first, in order."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == name:
                yield value
            yield from field_values(value, name)
    elif isinstance(data, list):
        for item in data:
            yield from field_values(item, name)
