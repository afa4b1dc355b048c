"""How much of a sweep or a fuzz a test runs: a fixed-seed sample in the quick suite, all of it in CI.

``BENCH_FULL_SWEEPS=1`` in the environment (``.ci/run`` sets it) runs every kill point, every concurrency and every
fuzzed run; without it each sweep runs a sample drawn with a fixed seed, so a failure reproduces, and every shape a
sweep covers (each mode, each kind of stop) stays in the sample: only the points within a shape are thinned.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import TypeVar

FULL_SWEEPS_VARIABLE = "BENCH_FULL_SWEEPS"
FULL_SWEEPS = os.environ.get(FULL_SWEEPS_VARIABLE) == "1"

T = TypeVar("T")


def scaled(full: int, quick: int) -> int:
    """``full`` when the whole sweep runs, else ``quick``."""
    return full if FULL_SWEEPS else quick


def sample(items: Sequence[T], quick: int, seed: int) -> list[T]:
    """Every item when the whole sweep runs, else ``quick`` of them drawn with ``seed``, in their given order."""
    if FULL_SWEEPS or quick >= len(items):
        return list(items)
    chosen = set(random.Random(seed).sample(range(len(items)), quick))
    return [item for index, item in enumerate(items) if index in chosen]


def covering(items: Sequence[T], *keys: Callable[[T], Hashable]) -> list[T]:
    """Every item when the whole sweep runs, else the first items that between them show every value of each key
    (every mode and every story, say), in their given order."""
    if FULL_SWEEPS:
        return list(items)
    seen: set[tuple[int, Hashable]] = set()
    chosen = []
    for item in items:
        values = {(index, key(item)) for index, key in enumerate(keys)}
        if not values <= seen:
            chosen.append(item)
            seen |= values
    return chosen


WIDEST_STEP = 3  # the quick suite's kill points are 1 to this many writes apart
SKIPPED_AT_THE_END = 0 if FULL_SWEEPS else WIDEST_STEP - 1  # writes a sample may not kill after, before the end


def kill_points(seed: str) -> Iterator[int]:
    """A sweep's kill points, the writes after which a command is killed: 1, 2, 3, ... when the whole sweep runs,
    else 1 and then steps of 1 to ``WIDEST_STEP`` drawn with ``seed`` (the caller stops once a command ends
    unkilled: its last kill point is then at most ``SKIPPED_AT_THE_END`` writes short of the command's writes)."""
    steps = random.Random(seed)
    point = 1
    while True:
        yield point
        point += 1 if FULL_SWEEPS else steps.randint(1, WIDEST_STEP)
