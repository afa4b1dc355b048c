"""A workflow step's deadline (seed 003's ``timeout_ms``) on the model's answer: real time for a live model,
the recorded duration for a replay, none for a scripted policy (it answers in no time by construction).

The step's action has its own side of the deadline: the gateway compares the action's simulated duration
(``latency_ms``) with it, nothing slept. A step over its deadline fails like any step: its on_failure applies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from harness.core.clock import KeepsModelTime
from harness.core.model_port import Model, ModelReply

T = TypeVar("T")


class StepTimedOut(Exception):
    """The model's answer for a step did not come within the step's ``timeout_ms``."""

    def __init__(self, timeout_ms: int, took_ms: float | None = None):
        self.timeout_ms, self.took_ms = timeout_ms, took_ms
        took = f" (it took {took_ms:.0f} ms when recorded)" if took_ms is not None else ""
        super().__init__(f"no answer from the model within {timeout_ms} ms{took}")


def on_real_time(model: Model) -> bool:
    """Whether a model's answers take real time here: a live endpoint, not a scripted policy or a replay."""
    return not isinstance(model, KeepsModelTime) and not model.label.startswith("scripted:")


async def answer_within(model: Model, call: Awaitable[ModelReply], timeout_ms: int | None) -> ModelReply:
    """The model's reply, held to ``timeout_ms``: awaited that long on a live model (cancelled after), compared
    with the recorded latency on a replay; a scripted policy is never late."""
    if timeout_ms is None:
        return await call
    if on_real_time(model):
        try:
            return await asyncio.wait_for(call, timeout_ms / 1000)
        except TimeoutError:
            raise StepTimedOut(timeout_ms) from None
    reply = await call
    if isinstance(model, KeepsModelTime) and reply.latency_ms > timeout_ms:
        raise StepTimedOut(timeout_ms, reply.latency_ms)
    return reply
