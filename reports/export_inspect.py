"""``bench export --format inspect``: inspect_ai eval logs, so ``inspect view`` and inspect's analysis tools open a run.

One log per (model, mode, gateway policy): bench never pools an enforcing and an auditing gateway, so a folder of
one policy gives one log per model and mode. A sample is a run: its id the scenario, its epoch the trial (inspect
groups a story's trials as epochs of one sample), its events every trace line (a gateway action as a tool event,
everything else as an info event holding the line) with each model call of the run's recording as a model event
before its step (messages, answer, tokens, time: inspect's transcript), its messages the conversation those calls
make (inspect's Messages tab), its scores bench's own verdicts. The recording is the folder's, or for a replay the
one its manifest's ``replay_of`` names (reports/run_story.py). The log's results are the
numbers ``bench report`` shows for that group (reports/metrics.py), not recomputed by inspect.

inspect_ai is an optional extra (``bench[inspect]``), imported here only: without it the export is refused in one
line naming the extra. The logs are built from inspect's own types and written by its ``write_eval_log``, so the
file format is inspect's.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from harness.errors import UserInputError
from harness.version import __version__
from reports.export_lines import default_out, kept_lines, write_whole_file
from reports.load import Traces, load_traces
from reports.metrics import GroupMetrics, compute
from reports.report import skip_warnings
from reports.run_story import FolderFacts

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage, ModelUsage

    from harness.models.run_calls import ModelCall

if TYPE_CHECKING:
    from inspect_ai.event import Event
    from inspect_ai.log import EvalLog, EvalSample, EvalScore
    from inspect_ai.scorer import Score

EXTRA = "inspect"
LOG_KEYS = ("model", "mode", "gateway_policy")  # one log each (GROUP_KEYS["model"] of reports/metrics.py)
RUN_FIELDS = ("schema_version", "run_id", "scenario", "mode", "model", "trial")  # said once per sample, not per event
NOT_JUDGED = "infrastructure"  # the verdict of a run bench does not judge: unscored, out of every rate
SIDE_EFFECTS = {  # the side_effects score's keys: the runs-table column each comes from
    "committed": "side_effects_committed",
    "blocked": "side_effects_blocked",
    "unauthorized": "unauthorized_side_effects",
    "premature": "premature_side_effects",
    "repeated": "repeated_side_effects",
}


@dataclass
class InspectExport:
    """The logs written (one per model, mode and policy), and what the loader had to say about the traces."""

    out: Path
    files: list[Path]
    runs: int
    warnings: list[str] = field(default_factory=list)


def missing_extra() -> str | None:
    """None when inspect_ai imports; otherwise the one-line reason, naming the extra (as modes/runtimes/base.py)."""
    try:
        importlib.import_module("inspect_ai.log")
    except ImportError as exc:
        name = getattr(exc, "name", None) or ""
        what = "is not installed" if name.split(".")[0] == "inspect_ai" else f"cannot be imported ({exc})"
        install = f"pip install -e '.[{EXTRA}]' (pip install 'bench[{EXTRA}]')"
        return f"--format inspect needs inspect_ai, which {what}: {install}"
    return None


def export_inspect(path: Path, out: Path | None = None) -> InspectExport:
    """Writes one inspect_ai ``.eval`` log per (model, mode, policy) of the run folder (or traces.jsonl) ``path``."""
    problem = missing_extra()
    if problem is not None:
        raise UserInputError(problem)
    from inspect_ai.log import write_eval_log

    traces = load_traces(path)
    if traces.runs.empty:
        raise UserInputError(f"{path}: no finished runs to export ({traces.skipped_count} lines skipped)")
    out = out if out is not None else default_out(path)
    metrics = compute(traces, "model").by_key()
    warnings = skip_warnings(traces)
    if traces.incomplete_runs:
        warnings.append(f"{traces.incomplete_runs} run(s) without a valid last summary are not in the logs")
    files = []
    folders: dict[str, FolderFacts] = {}  # each run folder's manifest and recording, read once for every log
    for values, runs in traces.runs.groupby(list(LOG_KEYS), observed=True, sort=True):
        key = tuple(str(v) for v in values)
        log = _eval_log(traces, runs, metrics[key], folders)
        file = out / f"{_file_name(key)}.eval"
        write_whole_file(file, partial(write_eval_log, log, format="eval"))
        files.append(file)
    return InspectExport(out, files, len(traces.runs), warnings)


def _file_name(key: tuple[str, ...]) -> str:
    """bench-MODE-MODEL-POLICY-HASH: readable, safe on every file system, distinct for distinct keys."""
    model, mode, policy = key
    slug = "-".join(re.sub(r"[^A-Za-z0-9.]+", "-", part).strip("-")[:48] for part in (mode, model, policy))
    digest = hashlib.blake2b("\0".join(key).encode(), digest_size=4).hexdigest()
    return f"bench-{slug}-{digest}"


# ---------------------------------------------------------------- the log


def _eval_log(traces: Traces, runs: pd.DataFrame, group: GroupMetrics, folders: dict[str, FolderFacts]) -> EvalLog:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalPlan,
        EvalPlanStep,
        EvalResults,
        EvalSpec,
        EvalStats,
    )

    model, mode, policy = (str(runs[k].iloc[0]) for k in LOG_KEYS)
    runs = runs.sort_values(["scenario", "trial", "run_id"], kind="stable")
    samples = list(_samples(traces, runs, folders))
    usage = _total_usage([s.model_usage.get(model) for s in samples])
    starts = [s.started_at for s in samples if s.started_at]
    ends = [s.completed_at for s in samples if s.completed_at]
    created = min(starts) if starts else datetime.now(UTC).isoformat()
    folder = str(runs["source"].iloc[0])
    ids = {what: _digest(what, folder, model, mode, policy) for what in ("eval", "task")}
    unfinished = any(info.unfinished for info in traces.run_info)
    spec = EvalSpec(
        eval_id=ids["eval"],
        run_id=_digest("run", folder),
        created=created,
        task=mode,
        task_id=ids["task"],
        task_display_name=f"{mode} ({policy})",
        task_description=f"bench mode {mode} under the {policy} gateway",
        dataset=EvalDataset(
            name="bench scenarios",
            location=folder,
            samples=runs["scenario"].nunique(),  # distinct samples: inspect multiplies them by the epochs
            sample_ids=sorted({str(s) for s in runs["scenario"]}),
        ),
        model=model,
        config=EvalConfig(epochs=int(runs["trial"].max())),
        packages={"bench": __version__, "inspect_ai": version("inspect_ai")},
        tags=["bench", policy],
        metadata={"bench_folder": folder, "mode": mode, "model": model, "gateway_policy": policy},
    )
    return EvalLog(
        status="cancelled" if unfinished else "success",
        eval=spec,
        plan=EvalPlan(steps=[EvalPlanStep(solver=mode, params={"gateway_policy": policy})]),
        results=EvalResults(
            total_samples=len(samples), completed_samples=len(samples), scores=_results(group, len(samples))
        ),
        stats=EvalStats(
            started_at=created, completed_at=max(ends) if ends else created, model_usage={model: usage} if usage else {}
        ),
        samples=samples,
    )


def _digest(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=11).hexdigest()


def _results(group: GroupMetrics, samples: int) -> list[EvalScore]:
    """The report's numbers for this group: rates over judged runs, verdict shares, side-effect totals."""
    from inspect_ai.log import EvalMetric, EvalScore

    judged = group.runs - group.infrastructure

    def score(name: str, metrics: Mapping[str, float | int | None], scored: int) -> EvalScore:
        return EvalScore(
            name=name,
            scorer=name,
            scored_samples=scored,
            unscored_samples=samples - scored,
            metrics={k: EvalMetric(name=k, value=v) for k, v in metrics.items() if v is not None and not _nan(v)},
        )

    shares = {v: n / judged for v, n in sorted(group.verdicts.items())} if judged else {}
    effects = {
        "committed": group.side_effects_committed,
        "blocked": group.side_effects_blocked,
        "unauthorized": group.unauthorized_side_effects,
        "premature": group.premature_side_effects,
        "repeated": group.repeated_side_effects,
    }
    return [
        score("stop_correct", {"accuracy": group.stop.rate}, group.stop.n),
        score("oracle_passed", {"accuracy": group.oracle.rate}, group.oracle.n),
        score("stop_verdict", shares, judged),
        score("side_effects", effects, judged),
    ]


def _nan(value: float | int) -> bool:
    return isinstance(value, float) and math.isnan(value)


# ---------------------------------------------------------------- samples


def _total_usage(usages: list[ModelUsage | None]) -> ModelUsage | None:
    """The samples' token counts summed (inspect's ModelUsage adds), None when no sample has any."""
    present = [u for u in usages if u is not None]
    if not present:
        return None
    total = present[0]
    for usage in present[1:]:
        total = total + usage
    return total


def _samples(traces: Traces, runs: pd.DataFrame, folders: dict[str, FolderFacts]) -> Iterator[EvalSample]:
    """One sample per run, in the order of ``runs``, each with its trace lines as events and its recorded calls;
    ``folders`` caches each source folder's facts (its recording is read once, not once a run)."""
    events = traces.events
    wanted = np.flatnonzero(events["run_id"].isin(runs["run_id"].astype(str)).to_numpy())
    lines: dict[str, list[dict[str, Any]]] = {}
    for _, line in kept_lines(traces, wanted):
        lines.setdefault(str(line.get("run_id")), []).append(line)
    rows: Iterator[Any] = runs.itertuples(index=False)
    for row in rows:
        source = str(row.source)
        facts = folders.get(source)
        if facts is None:
            facts = folders[source] = FolderFacts(_folder(source))
        calls, _ = facts.calls(str(row.scenario), str(row.mode), int(row.trial), str(row.model))
        run_lines = sorted(lines.get(str(row.run_id), []), key=lambda line: line.get("seq", 0))
        yield _sample(row, run_lines, calls or [])


def _folder(source: str) -> Path:
    """The run folder of a runs-table ``source`` (a folder, or its traces.jsonl)."""
    path = Path(source)
    return path.parent if path.suffix == ".jsonl" else path


def _sample(row: Any, run_lines: list[dict[str, Any]], calls: list[ModelCall]) -> EvalSample:
    """A run (a row of the runs table), its trace lines and its model calls as an inspect sample: the scenario's epoch
    ``trial``."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput, ModelUsage

    times = [t for t in (_time(line.get("ts")) for line in run_lines) if t is not None]
    started = min(times) if times else None
    answer = f"{row.status} at {row.suspended_at}" if _present(row.suspended_at) else str(row.status)
    return EvalSample(
        id=str(row.scenario),
        epoch=int(row.trial),
        input=str(row.scenario),
        target=str(row.expected_stop),
        output=ModelOutput.from_content(model=str(row.model), content=answer),
        scores=_scores(row, answer),
        metadata={name: _plain(value) for name, value in row._asdict().items()},
        events=_events(run_lines, calls, str(row.model), started),
        messages=_conversation(calls),
        model_usage={
            str(row.model): ModelUsage(
                input_tokens=int(row.prompt_tokens),
                output_tokens=int(row.completion_tokens),
                total_tokens=int(row.total_tokens),
                input_tokens_cache_read=int(row.cached_tokens),
                reasoning_tokens=int(row.reasoning_tokens),
            )
        },
        started_at=started.isoformat() if started else None,
        completed_at=max(times).isoformat() if times else None,
        total_time=float(row.wall_ms) / 1000,
        uuid=str(row.run_id),
    )


def _scores(row: Any, answer: str) -> dict[str, Score]:
    """bench's verdicts as inspect scores; a run bench does not judge (infrastructure) is unscored, never false."""
    from inspect_ai.scorer import Score

    verdict = str(row.stop_verdict) if _present(row.stop_verdict) else None
    violations = [str(v) for v in row.violations]
    scores = {
        "stop_verdict": Score(
            value=verdict or "",
            answer=answer,
            explanation=f"expected stop: {row.expected_stop}; {answer}",
        ),
        "side_effects": Score(value={name: _plain(getattr(row, column)) for name, column in SIDE_EFFECTS.items()}),
    }
    if verdict == NOT_JUDGED:
        why = "an infrastructure error ended the run: bench judges no stop and leaves it out of every rate"
        scores["stop_correct"] = Score.unscored(reason=NOT_JUDGED, explanation=why)
        scores["oracle_passed"] = Score.unscored(reason=NOT_JUDGED, explanation=why)
    else:
        scores["stop_correct"] = Score(value=bool(row.stop_correct), answer=answer)
        scores["oracle_passed"] = Score(value=bool(row.oracle_passed), explanation="; ".join(violations) or None)
    return scores


def _events(
    run_lines: list[dict[str, Any]], calls: list[ModelCall], model: str, started: datetime | None
) -> list[Event]:
    """The run's trace lines as events, each model call's event just before the first line of its step (its answer
    is what that step's lines go on from); a call whose step has no line goes last."""
    events: list[Event] = []
    pending = list(calls)
    for line in run_lines:
        when = _time(line.get("ts")) or started
        while pending and pending[0].step <= _int(line.get("step")):
            events.append(_model_event(pending.pop(0), model, when, started))
        events.append(_event(line, started))
    last = _time(run_lines[-1].get("ts")) if run_lines else started
    events += [_model_event(call, model, last, started) for call in pending]
    return events


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _messages(call: ModelCall) -> list[ChatMessage]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser

    kinds = {"system": ChatMessageSystem, "assistant": ChatMessageAssistant, "tool": ChatMessageTool}
    return [kinds.get(m.role, ChatMessageUser)(content=m.content) for m in call.messages]


def _usage(call: ModelCall) -> ModelUsage:
    from inspect_ai.model import ModelUsage

    prompt, completion = call.prompt_tokens or 0, call.completion_tokens or 0
    return ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion)


def _output(call: ModelCall, model: str) -> Any:
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput

    text = call.answer if call.answer is not None else ""
    choice = ChatCompletionChoice(message=ChatMessageAssistant(content=text, model=model), stop_reason="stop")
    return ModelOutput(
        model=model, choices=[choice], usage=_usage(call), time=call.latency_ms / 1000, error=call.problem
    )


def _model_event(call: ModelCall, model: str, answered: datetime | None, started: datetime | None) -> Event:
    """One recorded call as inspect's model event: the messages sent, the answer, its tokens and time."""
    from datetime import timedelta

    from inspect_ai.event import ModelEvent
    from inspect_ai.model import GenerateConfig

    done = answered or datetime.now(UTC)
    began = done - timedelta(milliseconds=call.latency_ms)
    return ModelEvent(
        model=model,
        input=_messages(call),
        tools=[],
        tool_choice="none",
        config=GenerateConfig(),
        output=_output(call, model),
        retries=call.attempts - 1,
        error=call.problem,
        timestamp=began,
        completed=done,
        working_start=max((began - started).total_seconds(), 0.0) if started else 0.0,
        working_time=call.latency_ms / 1000,
        metadata={"step": call.step, "purpose": call.purpose},
    )


def _conversation(calls: list[ModelCall]) -> list[ChatMessage]:
    """The run's conversation for inspect's Messages tab: each call's messages and its answer, a system prompt said
    again only where it differs from the one before (each call sends the whole prompt anew)."""
    from inspect_ai.model import ChatMessageAssistant

    messages: list[ChatMessage] = []
    system: str | None = None
    for call in calls:
        for message in _messages(call):
            if message.role == "system":
                if message.text == system:
                    continue
                system = message.text
            messages.append(message)
        messages.append(ChatMessageAssistant(content=call.answer if call.answer is not None else f"[{call.problem}]"))
    return messages


def _event(line: dict[str, Any], started: datetime | None) -> Event:
    """A gateway action as a tool event (the call, what the gateway did, what the agent saw); any other line as an
    info event holding the line. Either keeps the whole line (less the run's own fields)."""
    from inspect_ai.event import InfoEvent, ToolEvent

    kept = {k: v for k, v in line.items() if k not in RUN_FIELDS}
    when = _time(line.get("ts")) or started or datetime.now(UTC)
    offset = (when - started).total_seconds() if started else 0.0
    kind = str(line.get("kind"))
    if kind == "action" and line.get("action"):
        args = line.get("args")
        detail = line.get("detail")
        result = str(line.get("result"))
        return ToolEvent(
            id=f"{line.get('run_id')}-{line.get('seq')}",
            function=str(line["action"]),
            arguments=args if isinstance(args, dict) else {"args": args},
            result=f"{result}: {json.dumps(detail, ensure_ascii=False)}" if detail else result,
            timestamp=when,
            completed=when,
            working_start=offset,
            metadata=kept,
        )
    return InfoEvent(source=f"bench {kind}", data=kept, timestamp=when, working_start=offset)


def _time(text: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and value is not pd.NA


def _plain(value: Any) -> Any:
    """A runs-table value as plain JSON: numpy scalars and arrays unwrapped, a missing value as None."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    return value if _present(value) else None
