"""Telling a failure of a user's own agent from bench's: an exception raised inside the agent's file is the agent's.

A user's agent (``--mode FILE.py:FACTORY``) runs its own code inside the framework's loop: its nodes, its tools, its
factory. An exception whose traceback passes through the factory's file, and which is not one of bench's own (a
stop, a spent step budget, a model error: types of ``harness`` and ``modes``), ended the run because the agent
failed: it becomes ``AgentError``, judged ``agent_error`` (docs/agents.md), never infrastructure.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.core import AgentError

BENCHS_OWN = ("harness.", "modes.")


def agent_file(factory: Callable[..., Any]) -> Path | None:
    """The file the factory was written in; None when it has none (a builtin, a C extension)."""
    try:
        found = inspect.getsourcefile(factory)
    except TypeError:
        return None
    return Path(found).resolve() if found else None


def raised_in(exc: BaseException, file: Path) -> bool:
    """Whether the exception's traceback passes through ``file``."""
    return any(Path(frame.filename).resolve() == file for frame in traceback.extract_tb(exc.__traceback__))


def wrong_return(built: Any, wanted: str) -> AgentError:
    """The factory returned something its framework's adapter cannot run: the agent's failure."""
    return AgentError(TypeError(f"the agent's factory returned {type(built).__name__}, not {wanted}"))


@contextmanager
def agent_errors(factory: Callable[..., Any] | None) -> Iterator[None]:
    """Turns an exception of the agent's own code into ``AgentError``; bench's own exceptions pass unchanged."""
    file = agent_file(factory) if factory is not None else None
    try:
        yield
    except Exception as exc:
        if file is None or f"{type(exc).__module__}.".startswith(BENCHS_OWN) or not raised_in(exc, file):
            raise
        raise AgentError(exc) from exc
