"""A registry that a test may add throwaway plug-ins to: whatever the test registered is taken out again after it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.registry import Registry


@contextmanager
def restored(registry: Registry[Any]) -> Iterator[Registry[Any]]:
    """Yields ``registry``; afterwards every name the test added is removed, so the next test sees it as before."""
    before = set(registry.names())
    try:
        yield registry
    finally:
        for name in set(registry.names()) - before:
            registry.remove(name)
