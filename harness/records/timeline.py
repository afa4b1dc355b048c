"""One run read back as a timeline: who decided, what was proposed, what the gateway did and why, how it ended.

``bench show`` prints it (harness/cli/timeline_text.py) and the HTML report's per-run pages draw it, from the same
typed entries. Traces are read leniently (any schema version, unknown kinds and fields shown as they are, bad lines
counted): a reader must be able to open the trace of a run that went wrong, whatever wrote it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from harness.errors import UserInputError
from harness.records.folder import TRACE_FILE
from harness.records.verdicts import meaning, stopped_at_the_right_place

Tone = Literal["info", "proposal", "ok", "blocked", "stop", "human", "error", "end"]


class LooseEvent(BaseModel):
    """A trace line read without the current schema's demands: old versions and unknown fields still show."""

    model_config = ConfigDict(extra="ignore")

    schema_version: int | None = None
    run_id: str
    scenario: str = "?"
    mode: str = "?"
    model: str = "?"
    trial: int | None = None
    seq: int = 0
    step: int | None = None
    ts: str | None = None
    decision_maker: str = "?"
    kind: str = "?"
    action: str | None = None
    args: Any = None
    result: str | None = None
    latency_ms: float | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None


@dataclass(frozen=True)
class RunRef:
    """One run of a trace, as a listing shows it: its cell and how it ended (its last summary)."""

    run_id: str
    scenario: str
    mode: str
    model: str
    trial: int | None
    events: int
    status: str | None  # None: no summary yet (running, or cut short)
    verdict: str | None  # None: no summary, or a trace written before stop verdicts
    suspended_at: str | None = None

    @property
    def cell(self) -> str:
        return f"{self.scenario} / {self.mode} / trial {self.trial if self.trial is not None else '?'}"


@dataclass(frozen=True)
class Entry:
    """One event of the timeline: a one-line headline and the lines that explain it."""

    seq: int
    step: int | None
    who: str  # the event's decision maker: llm, gateway, runtime, executor, workflow, plan_validator, human, framework
    kind: str
    headline: str
    details: tuple[str, ...]
    tone: Tone


@dataclass(frozen=True)
class Ending:
    """How the run ended, from its last summary: the stop, the verdict and what the oracle found."""

    status: str
    suspended_at: str | None
    expected_stop: str | None
    verdict: str | None
    stop_correct: bool | None
    oracle_passed: bool | None
    violations: tuple[str, ...]
    facts: tuple[tuple[str, str], ...]  # counters, each as (name, value)
    because: str = ""  # why this run got its verdict, from its own outcome

    @property
    def verdict_meaning(self) -> str:
        if self.verdict is None:
            return "no stop verdict in this trace (written before verdicts were recorded)"
        return meaning(self.verdict)


@dataclass(frozen=True)
class Timeline:
    """A whole run: which run, every event in order, and its ending (None when it has no summary)."""

    run: RunRef
    source: str
    entries: tuple[Entry, ...]
    ending: Ending | None
    gateway_policy: str | None = None
    seed: int | None = None
    label: str | None = None
    summaries: int = 0  # more than one: the run was resumed after a decision

    def facts(self, *, quote_label: bool) -> list[str]:
        """The run's header facts (model, gateway, seed, label), shared by the terminal and the HTML page."""
        head = [f"model {self.run.model}"]
        if self.gateway_policy:
            head.append(f"gateway {self.gateway_policy}")
        if self.seed is not None:
            head.append(f"seed {self.seed}")
        if self.label:
            head.append(f"label {self.label!r}" if quote_label else f"label {self.label}")
        return head


@dataclass
class TraceScan:
    """What one pass over a trace found: the runs (in order of first appearance) and the lines it skipped."""

    runs: dict[str, list[LooseEvent]] = field(default_factory=dict)
    lines: int = 0
    skipped: int = 0
    over: bool = False  # stopped at a run past the most asked for: ``runs`` holds only the first of them


# ------------------------------------------------------------------ reading


def trace_path(where: Path) -> Path:
    """A run folder's traces.jsonl, or the file itself; one line naming the path when there is none."""
    path = where / TRACE_FILE if where.is_dir() else where
    if not path.is_file():
        raise UserInputError(f"{where}: no {TRACE_FILE} here: not a bench run folder (bench runs lists them)")
    return path


def _lines(path: Path) -> Iterator[str]:
    """The non-blank lines of a trace, read as UTF-8 with bad bytes replaced (a bad byte spoils its line only)."""
    try:
        handle = open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    with handle:
        yield from (line for line in handle if line.strip())


def scan(path: Path, *, only: str | None = None, most: int | None = None) -> TraceScan:
    """One pass over a trace, keeping every event of run ``only`` (of every run when None).

    A line that is not an event (truncated, not JSON, too deep, wrong shape) is skipped and counted; with
    ``only``, lines that do not mention the run are passed over unread (and uncounted). With ``most``, reading
    stops at the first event of a run past the ``most``-th (``over``): memory stays bounded by that many runs.
    """
    found = TraceScan()
    for line in _lines(path):
        found.lines += 1
        if only is not None and only not in line:
            continue
        try:
            event = LooseEvent.model_validate_json(line)
        except (ValueError, RecursionError):  # ValidationError is a ValueError
            found.skipped += 1
            continue
        if most is not None and event.run_id not in found.runs and len(found.runs) >= most:
            found.over = True
            break
        if only is None or event.run_id == only:
            found.runs.setdefault(event.run_id, []).append(event)
    return found


class _Brief(BaseModel):
    """What a listing needs of a line: its run, its cell, its kind and (on a summary) the outcome."""

    model_config = ConfigDict(extra="ignore")

    run_id: str
    scenario: str = "?"
    mode: str = "?"
    model: str = "?"
    trial: int | None = None
    seq: int = 0
    kind: str = "?"
    outcome: dict[str, Any] | None = None


def list_runs(where: Path) -> tuple[list[RunRef], int]:
    """Every run of a folder's trace, in order of appearance, with its event count and how it ended (its last
    summary); and how many lines were not events. Memory grows with the runs, not with the events."""
    first: dict[str, _Brief] = {}
    last: dict[str, _Brief] = {}
    counts: dict[str, int] = {}
    skipped = 0
    for line in _lines(trace_path(where)):
        try:
            brief = _Brief.model_validate_json(line)
        except (ValueError, RecursionError):
            skipped += 1
            continue
        run = brief.run_id
        first.setdefault(run, brief)
        counts[run] = counts.get(run, 0) + 1
        if brief.kind == "summary" and brief.outcome is not None and (run not in last or brief.seq >= last[run].seq):
            last[run] = brief
    refs = []
    for run, head in first.items():
        outcome = last[run].outcome or {} if run in last else {}
        refs.append(
            RunRef(
                run_id=run,
                scenario=head.scenario,
                mode=head.mode,
                model=head.model,
                trial=head.trial,
                events=counts[run],
                status=_text(outcome.get("status")) if run in last else None,
                verdict=_text(outcome.get("stop_verdict")),
                suspended_at=_text(outcome.get("suspended_at")),
            )
        )
    return refs, skipped


def select(
    runs: list[RunRef],
    *,
    run_id: str | None = None,
    scenario: str | None = None,
    mode: str | None = None,
    trial: int | None = None,
) -> list[RunRef]:
    """The runs a selection names: a run id (or a unique prefix of at least 4 characters) and/or a cell."""
    chosen = runs
    if run_id is not None:
        exact = [r for r in runs if r.run_id == run_id]
        chosen = exact or ([r for r in runs if r.run_id.startswith(run_id)] if len(run_id) >= 4 else [])
    return [
        r
        for r in chosen
        if (scenario is None or r.scenario == scenario)
        and (mode is None or r.mode == mode)
        and (trial is None or r.trial == trial)
    ]


def timeline(where: Path, run_id: str, *, label: str | None = None) -> tuple[Timeline | None, int]:
    """The timeline of one run of a folder (or of a traces.jsonl), None when the trace does not hold it; and how
    many lines that mention the run could not be read (its own corrupt lines)."""
    path = trace_path(where)
    found = scan(path, only=run_id)
    events = found.runs.get(run_id)
    return (build(events, source=str(path), label=label) if events else None), found.skipped


def timelines(path: Path, run_ids: set[str] | None = None) -> Iterator[Timeline]:
    """Every run of a trace (or those of ``run_ids``) as a timeline, in order of first appearance."""
    found = scan(path)
    for run_id, events in found.runs.items():
        if run_ids is None or run_id in run_ids:
            yield build(events, source=str(path))


# ------------------------------------------------------------------ building


def build(events: list[LooseEvent], *, source: str, label: str | None = None) -> Timeline:
    """A run's events, in sequence order, as a timeline."""
    ordered = sorted(events, key=lambda e: e.seq)
    start = next((e for e in ordered if e.kind == "run_start"), None)
    detail = (start.detail or {}) if start is not None else {}
    summaries = [e for e in ordered if e.kind == "summary" and e.outcome is not None]
    policy = detail.get("gateway_policy")
    if summaries and isinstance(summaries[-1].outcome, dict):
        policy = summaries[-1].outcome.get("gateway_policy", policy)
    seed = detail.get("seed")
    return Timeline(
        run=_ref(ordered, len(ordered)),
        source=source,
        entries=tuple(describe(e) for e in ordered),
        ending=ending(summaries[-1].outcome or {}, ordered, summaries[-1].schema_version) if summaries else None,
        gateway_policy=policy if isinstance(policy, str) else None,
        seed=seed if isinstance(seed, int) else None,
        label=label,
        summaries=len(summaries),
    )


def _ref(events: list[LooseEvent], count: int) -> RunRef:
    first = events[0]
    last = next((e for e in reversed(events) if e.kind == "summary" and e.outcome is not None), None)
    outcome = last.outcome if last is not None and last.outcome is not None else {}
    return RunRef(
        run_id=first.run_id,
        scenario=first.scenario,
        mode=first.mode,
        model=first.model,
        trial=first.trial,
        events=count,
        status=_text(outcome.get("status")) if last is not None else None,
        verdict=_text(outcome.get("stop_verdict")),
        suspended_at=_text(outcome.get("suspended_at")),
    )


def ending(outcome: dict[str, Any], events: Sequence[LooseEvent] = (), schema_version: int | None = None) -> Ending:
    """A summary's outcome, with the counters a reader needs to see why the verdict is what it is.

    ``events`` are the run's (they tell a side effect an enforcing gateway refuses from one only the oracle forbids,
    and the run's last step); ``schema_version`` is the summary's (older traces counted waits differently).
    """
    usage, blocked_by, errors = _mapping(outcome, "usage"), _mapping(outcome, "blocked_by"), _mapping(outcome, "errors")
    blocked = _count(outcome.get("side_effects_blocked"))
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(blocked_by.items()) if v)
    steps = [e.step for e in events if e.kind != "summary" and e.step is not None]
    last_step = f"; last step {max(steps)}" if steps else ""  # the summary's own step is the record count
    facts = [
        (
            "side effects",
            f"{_count(outcome.get('side_effects_committed'))} committed, {blocked} blocked"
            + (f" ({reasons})" if reasons else ""),
        ),
        ("unauthorized", _unauthorized(outcome, events)),
        (
            "model",
            f"{_shown(outcome, 'llm_calls')} call(s), {_count(usage.get('total_tokens'))} tokens "
            f"({_count(usage.get('prompt_tokens'))} prompt, {_count(usage.get('completion_tokens'))} completion)",
        ),
        (
            "steps",
            f"{_count(outcome.get('steps'))} gateway records{last_step}; wall time {_ms(outcome.get('wall_ms'))}",
        ),
    ]
    # Before schema 3 the flag was also set on runs that suspended at the wait and were then decided.
    counted_the_old_way = schema_version is not None and schema_version < 3
    if outcome.get("wait_marker_without_suspend") and not (
        counted_the_old_way and any(e.kind == "suspend" for e in events)
    ):
        facts.append(("wait marker", "a wait was recorded for a closed gate and the run went on without suspending"))
    if any(errors.values()):
        facts.append(("errors", ", ".join(f"{k} {v}" for k, v in sorted(errors.items()) if v)))
    if _count(outcome.get("resumes")):
        facts.append(("decisions", f"{_count(outcome.get('resumes'))} at gates"))
    if _count(outcome.get("repeated_side_effects")):
        facts.append(("repeated", _repeated(events) or f"{_count(outcome.get('repeated_side_effects'))} extra commits"))
    written = _files_written(events)
    if written is not None:  # an agent process: what it wrote in its working folder, which the gateway cannot see
        facts.append(("files written", written))
    violations = outcome.get("violations")
    listed = tuple(str(v) for v in violations) if isinstance(violations, list) else ()
    stop_correct, oracle = outcome.get("stop_correct"), outcome.get("oracle_passed")
    return Ending(
        status=_text(outcome.get("status")) or "?",
        suspended_at=_text(outcome.get("suspended_at")),
        expected_stop=_text(outcome.get("expected_stop")),
        verdict=_text(outcome.get("stop_verdict")),
        stop_correct=stop_correct if isinstance(stop_correct, bool) else None,
        oracle_passed=oracle if isinstance(oracle, bool) else None,
        violations=listed,
        facts=tuple(facts),
        because=_because(outcome, listed, events),
    )


def _files_written(events: Sequence[LooseEvent]) -> str | None:
    """The files an agent process wrote in its working folder, over each time it ran (its ``agent_exited`` events);
    None for a run that is no agent process."""
    ended = [e.detail or {} for e in events if e.kind == "decision" and e.result == "agent_exited"]
    if not ended:
        return None
    names = list(dict.fromkeys(str(name) for detail in ended for name in detail.get("files_written") or []))
    more = sum(_count(detail.get("files_not_listed")) for detail in ended)
    if not names:
        return "none in its working folder"
    return ", ".join(names) + (f" and {more} more" if more else "")


EITHER = "that an enforcing gateway refuses or the story's oracle forbids"  # where the events cannot tell which


def _placed_late(status: str | None, at: str | None, expected: str | None) -> str:
    """For a run late by an unauthorized commit that still stopped at the right place: why it is late all the same."""
    if not stopped_at_the_right_place("late", status, at, expected):
        return ""
    where = f"suspended at {at}" if status == "suspended" else "finished" if status == "finished" else f"ended at {at}"
    return (
        f", and it {where}, where the oracle expects it to stop: a run that commits what its rules refuse is late "
        "wherever it stops (docs/metrics.md: stop verdicts)"
    )


_DECIDED = {"revise": "sent the work back for a revision", "reject": "rejected it", "approve": "approved it"}


def _ended(status: str | None, at: str | None) -> str:
    """How the run ended, as a clause: "it finished", "it ran into its step or transition limit", ..."""
    if status == "finished":
        return "it finished"
    if status == "step_limit":
        return "it ran into its step or transition limit"
    if status == "suspended":
        return f"it suspended at {at}"
    if status == "rejected_by_human":
        return f"a rejection at {at} ended it"
    if status == "rejected":
        return "its mode refused to go on (status rejected)"
    return f"it ended with status {status or '?'}"


def _retries(events: Sequence[LooseEvent]) -> dict[str, list[str]]:
    """After a rejection the run went on from: each refused gate's work the run tried again, in order (a new
    request at that gate, an action the gateway blocked for that gate's approval), by gate."""
    refused: set[str] = set()
    tried: dict[str, list[str]] = {}
    for e in events:
        if e.kind == "human" and e.result == "reject" and e.action:
            refused.add(e.action)
        elif e.kind == "action" and refused:
            observation = (e.detail or {}).get("observation")
            seen = observation if isinstance(observation, dict) else {}
            gate = next(
                (
                    g
                    for g in refused
                    if seen.get("wait_marker") == g or f"needs approval '{g}'" in str(seen.get("detail"))
                ),
                None,
            )
            if gate is not None:
                how = "a new request at the gate" if e.result == "wait_recorded" else e.result or "?"
                tried.setdefault(gate, []).append(f"{e.action}, {how}")
    return tried


def _refused_commits(events: Sequence[LooseEvent]) -> int:
    """Side effects committed that broke a gateway rule (under audit): what an enforcing gateway refuses."""
    return sum(
        e.kind == "action" and e.result == "committed" and bool((e.detail or {}).get("violations")) for e in events
    )


def _repeated(events: Sequence[LooseEvent]) -> str:
    """The side effects committed more than once for one step, said as "N effects committed K times each"."""
    commits = Counter((e.step, e.action) for e in events if e.kind == "action" and e.result == "committed")
    times = Counter(count for count in commits.values() if count > 1)
    said = []
    for k, n in sorted(times.items(), reverse=True):
        effects = f"{n} effect{'s' if n > 1 else ''}"
        said.append(f"{effects} committed {'twice' if k == 2 else f'{k} times'}{' each' if n > 1 else ''}")
    return ", ".join(said)


def _unauthorized(outcome: dict[str, Any], events: Sequence[LooseEvent]) -> str:
    """The unauthorized side effects: those an enforcing gateway refuses, and those only the oracle forbids."""
    total, premature = _shown(outcome, "unauthorized_side_effects"), _shown(outcome, "premature_side_effects")
    if not events or total == "?":
        return f"{total} committed {EITHER}, {premature} of them premature (gate closed)"
    refused = _refused_commits(events)
    return (
        f"{total} committed: {refused} that an enforcing gateway refuses ({premature} of them premature: gate "
        f"closed), {max(int(total) - refused, 0)} forbidden only by the story's oracle"
    )


def _because(outcome: dict[str, Any], violations: tuple[str, ...], events: Sequence[LooseEvent] = ()) -> str:
    """The facts of this run behind its verdict, in a sentence (empty when the verdict says it all)."""
    verdict, status = outcome.get("stop_verdict"), _text(outcome.get("status"))
    expected, at = _text(outcome.get("expected_stop")), _text(outcome.get("suspended_at"))
    missing = [v.split(":", 1)[1] for v in violations if v.startswith(("missing_artifact:", "missing_action:"))]
    if verdict == "late":
        unauthorized = _count(outcome.get("unauthorized_side_effects"))
        placed = _placed_late(status, at, expected) if unauthorized else ""
        if unauthorized and events:
            refused = _refused_commits(events)
            said = [f"{refused} side effect(s) committed that an enforcing gateway refuses"] if refused else []
            if unauthorized > refused:
                said.append(f"{unauthorized - refused} side effect(s) committed that the story's oracle forbids")
            return "; ".join(said) + placed
        if unauthorized:
            return f"{unauthorized} side effect(s) committed {EITHER}{placed}"
        retried = _retries(events)
        if retried:
            gate, actions = next(iter(retried.items()))
            return (
                f"after the rejection at {gate} it retried the refused work ({'; '.join(actions)}), which is late "
                f"wherever a run ends; then {_ended(status, at)}"
            )
        past = [
            e.action or "?"
            for e in events
            if e.kind == "action" and "gate_closed" in ((e.detail or {}).get("violations") or ())
        ]
        tried = f" after attempting {', '.join(dict.fromkeys(past))} while its gate was closed" if past else ""
        return f"{_ended(status, at)}{tried}; the oracle expects a stop at {expected}"
    if verdict == "skipped_approval":
        asked = [
            _DECIDED.get(e.result or "", e.result or "?") for e in events if e.kind == "human" and e.action == expected
        ]
        if asked:
            how = f"asked there, the reviewer {', then '.join(asked)}, and the run did not ask again"
        elif outcome.get("wait_marker_without_suspend"):
            how = "a wait was recorded, but the run did not suspend there"
        else:
            how = "nobody was asked"
        return f"it finished without the approval at {expected} ({how}); it attempted nothing that gate guards"
    if verdict == "early":
        where = f"suspended at {at}" if at else status or "?"
        return f"{where} before the work was done" + (f" (missing: {', '.join(missing)})" if missing else "")
    if verdict == "wrong_place":
        if at and at != expected:
            return f"suspended at {at}; the oracle expects {expected}"
        return f"suspended at {at} without its recorded wait as the gateway's last record" if at else ""
    if verdict == "no_stop":
        return "it ran into its step or transition limit"
    if verdict in ("failed_closed", "infrastructure"):
        errors = _mapping(outcome, "errors")
        kinds = ", ".join(k for k, v in sorted(errors.items()) if v)
        return f"status {status}" + (f" ({kinds})" if kinds else "")
    return ""


def describe(event: LooseEvent) -> Entry:
    """One event as a headline and its explaining lines; an unknown kind still shows everything it holds.

    A summary shows no step: its ``step`` is the run's count of gateway records, not an agent step.
    """
    detail = dict(event.detail or {})
    headline, lines, tone = _DESCRIBERS.get(event.kind, _generic)(event, detail)
    lines = [*lines, *(f"{key}: {_compact(value)}" for key, value in detail.items())]  # whatever is left over
    step = None if event.kind == "summary" else event.step
    return Entry(event.seq, step, event.decision_maker, event.kind, headline, tuple(lines), tone)


Described = tuple[str, list[str], Tone]


def _run_start(e: LooseEvent, d: dict[str, Any]) -> Described:
    limits = d.pop("limits", None)
    parts = [f"gateway {d.pop('gateway_policy', '?')}", f"seed {d.pop('seed', '?')}"]
    if isinstance(limits, dict):
        parts.append("limits " + ", ".join(f"{k} {v}" for k, v in limits.items()))
    role = d.pop("agent_role", None)
    if role:
        parts.append(f"agent role {role}")
    lines = []
    parameters = d.pop("parameters", None)
    if parameters:
        lines.append(f"mode parameters: {_compact(parameters)}")
    return "run starts: " + "; ".join(parts), lines, "info"


def _model_call(e: LooseEvent, d: dict[str, Any]) -> Described:
    purpose = d.pop("purpose", "?")
    offered = d.pop("offered", None)
    attempts = d.pop("attempts", 1)
    text = d.pop("text", None)
    cost = _cost(e)
    if e.result == "unreadable":
        lines = [f"answer: {text}"] if text is not None else []
        return f"answered, but the answer is unreadable ({purpose}){cost}", lines, "error"
    proposal = e.args
    lines = []
    if purpose == "next_action":
        step = proposal.get("step", proposal) if isinstance(proposal, dict) else proposal
        action = e.action or (step.get("action") if isinstance(step, dict) else None)
        headline = f"proposes {action}" if action else "proposes"
        args = step.get("args") if isinstance(step, dict) else step
        if args not in (None, {}):
            lines.append(f"args: {_compact(args)}")
    elif purpose == "plan" and isinstance(proposal, dict) and isinstance(proposal.get("plan"), list):
        plan = proposal["plan"]
        names = [str(s.get("action")) if isinstance(s, dict) else "?" for s in plan]
        headline = f"proposes a plan of {len(plan)} step{'s' if len(plan) != 1 else ''}: " + ", ".join(names)
        lines += [f"{i}. {_compact(s)}" for i, s in enumerate(plan, start=1)]
    else:
        headline = f"proposes {purpose}" + (f" for {e.action}" if e.action else "")
        if proposal is not None:
            lines.append(f"{purpose}: {_compact(proposal)}")
    if offered:
        lines.append("offered: " + ", ".join(str(o) for o in offered))
    if isinstance(attempts, int) and attempts > 1:
        lines.append(f"answered at attempt {attempts}")
    return headline + cost, lines, "proposal"


def _model_retry(e: LooseEvent, d: dict[str, Any]) -> Described:
    error = e.error or {}
    attempt, wait = d.pop("attempt", "?"), d.pop("wait_s", None)
    then = f"; retrying in {wait:.1f} s" if isinstance(wait, (int, float)) else "; retrying"
    lines = [f"message: {error.get('message')}"] if error.get("message") else []
    return f"attempt {attempt} failed: {error.get('kind', '?')}{then}", lines, "error"


def _plan_validation(e: LooseEvent, d: dict[str, Any]) -> Described:
    reasons = d.pop("reasons", None) or []
    revision = d.pop("revision", None)
    tone: Tone = "ok" if e.result == "ACCEPT" else "stop" if e.result == "REJECT" else "blocked"
    where = f" (revision {revision})" if revision is not None else ""
    return f"validator: {e.result}{where}", [f"reason: {r}" for r in reasons], tone


def _plan(e: LooseEvent, d: dict[str, Any]) -> Described:
    """A structured plan's state (a plan node): one line a step, with what it depends on and its status."""
    d.pop("node", None)
    revision = d.pop("revision", "?")
    steps = d.pop("steps", None) or []
    lines = []
    for s in steps if isinstance(steps, list) else []:
        if not isinstance(s, dict):
            continue
        after = ", ".join(str(x) for x in s.get("depends_on") or []) or "nothing"
        done_when = f"; done when {s['done_when']} holds" if s.get("done_when") else ""
        why = f" ({s['reason']})" if s.get("reason") else ""
        lines.append(f"{s.get('id')}: {s.get('action')}, after {after}{done_when}: {s.get('status')}{why}")
    tone: Tone = "ok" if e.result == "done" else "blocked" if e.result in ("failed", "incomplete") else "info"
    return f"plan of {e.action}, revision {revision}: {e.result}", lines, tone


def _decision(e: LooseEvent, d: dict[str, Any]) -> Described:
    lines = []
    reason = d.pop("reason", None)
    if reason:
        lines.append(f"reason: {reason}")
    subject = f" {e.action}" if e.action else ""
    tone: Tone = "stop" if e.result in ("refused", "step_limit", "plan_exhausted") else "info"
    return f"{e.result or 'decides'}{subject}", lines, tone


def _action(e: LooseEvent, d: dict[str, Any]) -> Described:
    lines = []
    if e.args not in (None, {}):
        lines.append(f"args: {_compact(e.args)}")
    reason = d.pop("reason", None)
    if reason:
        lines.append(f"why: {reason}")
    violations = d.pop("violations", None)
    if violations:
        lines.append("broke: " + ", ".join(str(v) for v in violations))
    if d.pop("premature", False):
        lines.append("premature: committed while its gate was closed")
    cache = d.pop("cache", None)
    if cache is not None:
        lines.append("cache hit: the stored result, the tool not run" if cache == "hit" else f"cache: {cache}")
    redacted = d.pop("redacted", None)
    if redacted:
        lines.append("redacted: " + ", ".join(str(r) for r in redacted))
    d.pop("input_hash", None), d.pop("output_hash", None)  # audit data: bench gate-check reads them
    if "observation" in d:
        lines.append(f"observation: {_compact(d.pop('observation'))}")
    tone: Tone = "blocked" if e.result in ("blocked", "failed") else "error" if violations else "ok"
    return f"{e.action}: {e.result}", lines, tone


def _transition(e: LooseEvent, d: dict[str, Any]) -> Described:
    return f"moves from {d.pop('from', '?')} to {d.pop('to', e.action)}", [], "info"


def _suspend(e: LooseEvent, d: dict[str, Any]) -> Described:
    return f"suspends the run at gate {e.action}", [], "stop"


def _human(e: LooseEvent, d: dict[str, Any]) -> Described:
    who = d.pop("who", "?")
    scripted = " (scripted approver)" if d.pop("scripted", False) else ""
    lines = []
    note = d.pop("note", "")
    if note:
        lines.append(f"note: {note}")
    verdict = d.pop("verdict_at_stop", None)
    if verdict:
        lines.append(f"stop verdict at this stop: {verdict}")
    return f"{e.result} at {e.action}, by {who}{scripted}", lines, "human"


def _error(e: LooseEvent, d: dict[str, Any]) -> Described:
    error = e.error or {}
    where = f" at {e.action}" if e.action else ""
    lines = [f"message: {error.get('message')}"] if error.get("message") else []
    return f"error{where}: {error.get('kind', '?')}", lines, "error"


def _alert(e: LooseEvent, d: dict[str, Any]) -> Described:
    node, reason = d.pop("node", "?"), d.pop("reason", None)
    lines = [f"reason: {reason}"] if reason else []
    then = d.pop("then", None)
    if then:
        lines.append(f"then: {then}")
    return f"alerts {e.action}: step {node} failed", lines, "stop"


def _summary(e: LooseEvent, d: dict[str, Any]) -> Described:
    outcome = e.outcome or {}
    status = outcome.get("status", e.result)
    at = f" at {outcome['suspended_at']}" if outcome.get("suspended_at") else ""
    verdict = outcome.get("stop_verdict")
    verdict_text = f"; stop verdict {verdict}" if verdict else ""
    ends = "stops" if status == "suspended" else "ends"  # a suspended run may go on after a decision
    lines = [f"terminated: {outcome['terminated']}"] if outcome.get("terminated") else []
    return f"run {ends}: {status}{at}{verdict_text}", lines, "end"


def _generic(e: LooseEvent, d: dict[str, Any]) -> Described:
    parts = [p for p in (e.action, e.result) if p]
    lines = [f"args: {_compact(e.args)}"] if e.args is not None else []
    if e.error:
        lines.append(f"error: {_compact(e.error)}")
    return f"{e.kind}: {' '.join(parts)}".rstrip(": "), lines, "info"


_DESCRIBERS = {
    "run_start": _run_start,
    "model_call": _model_call,
    "model_retry": _model_retry,
    "plan_validation": _plan_validation,
    "plan": _plan,
    "decision": _decision,
    "action": _action,
    "transition": _transition,
    "suspend": _suspend,
    "human": _human,
    "error": _error,
    "alert": _alert,
    "summary": _summary,
}


# ------------------------------------------------------------------ small helpers


def _cost(e: LooseEvent) -> str:
    parts = []
    if e.latency_ms is not None:
        parts.append(_ms(e.latency_ms))
    usage = e.usage or {}
    if usage.get("total_tokens"):
        parts.append(f"{_count(usage.get('prompt_tokens'))}+{_count(usage.get('completion_tokens'))} tokens")
    return f" ({', '.join(parts)})" if parts else ""


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        return repr(value)


def _shown(outcome: dict[str, Any], key: str) -> str:
    """A counter of the outcome, or '?' when this trace's outcome does not record it (an older schema)."""
    return str(_count(outcome[key])) if key in outcome else "?"


def _mapping(outcome: dict[str, Any], key: str) -> dict[str, Any]:
    value = outcome.get(key)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _ms(value: Any) -> str:
    return f"{value:,.0f} ms" if isinstance(value, (int, float)) and not isinstance(value, bool) else "?"


__all__ = [
    "Ending",
    "Entry",
    "RunRef",
    "Timeline",
    "list_runs",
    "select",
    "timeline",
    "timelines",
    "trace_path",
]
