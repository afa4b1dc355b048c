"""What the model of one run was sent and what it answered, call by call, read back from the run folder's
``recording.jsonl`` for the run page and ``bench show --prompts``.

A recording keys each call by the run it belongs to (scenario, mode, trial) and the model's label, in the order the
run made them; only live runs are recorded (a scripted or replayed model's folder has none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ModelError
from harness.models.parsing import message_text
from harness.models.recording import RECORDING_FILE, RecordEntry
from harness.records.trace import TraceReadReport, read_records

CallKey = tuple[str, str, int, str]  # scenario, mode, trial, model label


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class ModelCall:
    """One call: the messages sent, the raw answer (or why there is none), and its cost."""

    step: int
    purpose: str
    messages: tuple[Message, ...]
    answer: str | None  # the assistant's text as it came, None when the call brought none back
    problem: str | None  # why the answer is missing or unreadable (an endpoint error, a body that is not JSON)
    latency_ms: float
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int  # 1 + the failed attempts retried before it


@dataclass(frozen=True)
class Recorded:
    """A folder's recording grouped per run; ``skipped`` counts its unreadable lines."""

    calls: dict[CallKey, list[ModelCall]]
    skipped: int


def read_calls(folder: Path) -> Recorded | None:
    """Every recorded call of a run folder, per run, in the order made; None when the folder has no recording."""
    path = folder / RECORDING_FILE
    if not path.is_file():
        return None
    report = TraceReadReport()
    calls: dict[CallKey, list[ModelCall]] = {}
    for entry in read_records(path, RecordEntry, report):
        calls.setdefault((entry.scenario, entry.mode, entry.trial, entry.model), []).append(model_call(entry))
    return Recorded(calls, report.skipped)


def model_call(entry: RecordEntry) -> ModelCall:
    exchange = entry.exchange
    messages = exchange.request.get("messages")
    sent = tuple(
        Message(str(m.get("role", "?")), _content(m.get("content"))) for m in messages or [] if isinstance(m, dict)
    )
    answer: str | None = None
    problem: str | None = None
    if exchange.error is not None:
        problem = f"{exchange.error.kind}: {exchange.error.message}"
    elif exchange.response is None:
        answer = exchange.raw
        problem = f"unreadable answer: {exchange.unreadable or 'no body'}"
    else:
        try:
            answer = message_text(exchange.response)
        except ModelError as exc:
            problem = f"{exc.kind}: {exc}"
    usage = exchange.response.get("usage") if isinstance(exchange.response, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return ModelCall(
        step=entry.step,
        purpose=entry.purpose,
        messages=sent,
        answer=answer,
        problem=problem,
        latency_ms=exchange.latency_ms,
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        attempts=1 + len(exchange.attempts),
    )


def _content(value: Any) -> str:
    """A message's content: its text, or the parts of a multi-part content as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
