"""Writes large synthetic traces for the report benchmark: real harness runs, copied with synthetic costs.

The shapes (event kinds, decision makers, actions, outcomes) come from running every mode on every
scenario with the scripted policies through the real runner. Each copy gets a fresh run id and
synthetic model latency and token counts (log-normal), with the summary's totals kept consistent,
because scripted policies report zero for both.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from pathlib import Path
from typing import Any

from harness.core.clock import FakeClock
from harness.matrix.cell.cell_runner import MatrixConfig, cells_for, run_matrix
from harness.models.scripted import POLICIES, ScriptedSource
from harness.records.trace import TraceEvent
from harness.scenario.load import load_all
from modes import select_modes

ROOT = Path(__file__).resolve().parent.parent


def template_runs(trials: int = 4) -> list[list[dict[str, Any]]]:
    """Real runs: every mode x scenario x scripted policy, ``trials`` each, as lists of event dicts."""
    scenarios = list(load_all(ROOT / "scenarios").values())
    runs: dict[str, list[dict[str, Any]]] = {}
    for policy in POLICIES:
        events: list[TraceEvent] = []
        config = MatrixConfig(model=ScriptedSource(policy), seed=7, clock=FakeClock())
        asyncio.run(run_matrix(cells_for(scenarios, select_modes(["all"]), trials), config, events.append))
        for event in events:
            runs.setdefault(event.run_id, []).append(event.model_dump(mode="json"))
    return list(runs.values())


def _template(event: dict[str, Any]) -> list[str]:
    """The event's JSON split around its variable slots, so a copy is a join, not a json.dumps."""
    event = dict(event, run_id="\x00run_id\x00", trial="\x00trial\x00")
    if event["kind"] in ("model_call", "summary"):
        event["latency_ms"] = "\x00latency_ms\x00" if event["kind"] == "model_call" else "\x00wall_ms\x00"
        event["usage"] = "\x00usage\x00" if event["kind"] == "model_call" else "\x00outcome_usage\x00"
    if event["kind"] == "summary":
        event["outcome"] = dict(event["outcome"], usage="\x00outcome_usage\x00", wall_ms="\x00wall_ms\x00")
    text = json.dumps(event, separators=(",", ":"))
    parts: list[str] = []
    for piece in text.split('"\\u0000'):
        name, sep, rest = piece.partition('\\u0000"')
        if sep:
            parts.extend([name, rest])
        else:
            parts.append(piece)
    return parts  # literal, slot, literal, slot, ..., literal


def write_synthetic(path: Path, events: int, seed: int = 0) -> int:
    """Writes exactly ``events`` lines to ``path`` (the last run may be cut short); returns the run count."""
    rng = random.Random(seed)
    runs = [[_template(e) for e in run] for run in template_runs()]
    written = run_count = 0
    with open(path, "w", encoding="utf-8") as handle:
        while written < events:
            run = runs[run_count % len(runs)]
            run_count += 1
            values: dict[str, str] = {
                "run_id": json.dumps(uuid.UUID(int=rng.getrandbits(128)).hex[:16]),
                "trial": str(run_count),
            }
            total_ms, prompt, completion = 0.0, 0, 0
            lines = []
            for parts in run:
                if "usage" in parts:  # a model call: its own latency and tokens
                    latency = round(rng.lognormvariate(6.5, 0.6), 3)
                    p, c = int(rng.lognormvariate(6.0, 0.4)), int(rng.lognormvariate(3.5, 0.5))
                    total_ms, prompt, completion = total_ms + latency, prompt + p, completion + c
                    values["latency_ms"] = str(latency)
                    values["usage"] = json.dumps({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})
                if "outcome_usage" in parts:
                    values["wall_ms"] = str(round(total_ms + rng.uniform(0.5, 5.0), 3))
                    values["outcome_usage"] = json.dumps(
                        {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
                    )
                lines.append("".join(values[p] if i % 2 else p for i, p in enumerate(parts)))
            take = lines[: events - written]
            handle.write("\n".join(take) + "\n")
            written += len(take)
    return run_count
