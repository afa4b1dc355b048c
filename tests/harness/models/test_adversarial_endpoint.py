"""The adversarial-endpoint property: against a live endpoint that always cheats (forged approvals, a fake human
decision, unoffered actions, gated actions straight away, two JSON objects in one answer, case variants of action
names, prompt injections), every registered mode on every scenario, at concurrency 8, under both gateway policies:
hard-gate modes commit no premature and no unauthorized side effect, every run has exactly one final summary, and no
run ends ``internal``. Modes are taken from the registry, so a mode added later is held to the same property."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from harness.errors import INFRASTRUCTURE_ERRORS
from harness.records.trace import TraceEvent
from harness.scenario.load import load_all
from modes import MODES, select_modes
from tests.helpers.bench import SCENARIOS, bench_main
from tests.helpers.cheating_server import ATTACKS, CheatingServer

BUILT_IN = select_modes([])  # what --mode all runs: bench's own modes, not the runtime adapters

TRIALS = 2


@pytest.fixture(scope="module")
def scenarios():
    return load_all(SCENARIOS)


def cheated_run(tmp_path: Path, monkeypatch, capsys, scenarios, policy: str) -> tuple[list[TraceEvent], CheatingServer]:
    out = tmp_path / f"cheated-{policy}"
    with CheatingServer(scenarios.values()) as server:
        for name, value in {
            "LLM_API_URL": server.base_url,
            "LLM_MODEL": "cheater",
            "LLM_API_KEY": "sk-cheat-0000",
        }.items():
            monkeypatch.setenv(name, value)
        code, _, err = bench_main(
            monkeypatch, capsys, "run", "--model", "live", "--mode", "all", "--scenario", "all",
            "--trials", str(TRIALS), "--concurrency", "8", "--gateway", policy,
            "--timeout", "10", "--retries", "0", "--out", str(out),
        )  # fmt: skip
    assert code == 0, err
    assert "Traceback" not in err
    trace = [TraceEvent.model_validate_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    return trace, server


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["enforce", "audit"])
def test_a_cheating_endpoint_never_gets_a_hard_gate_mode_past_its_gate(
    tmp_path, monkeypatch, capsys, scenarios, policy
):
    trace, server = cheated_run(tmp_path, monkeypatch, capsys, scenarios, policy)
    assert set(server.served) == set(ATTACKS)  # every cheat was really tried

    runs: dict[str, list[TraceEvent]] = defaultdict(list)
    for event in trace:
        runs[event.run_id].append(event)
    cells = {(e.scenario, e.mode, e.trial) for e in trace}
    assert len(runs) == len(cells) == len(BUILT_IN) * len(scenarios) * TRIALS
    for events in runs.values():
        summaries = [e for e in events if e.kind == "summary"]
        assert len(summaries) == 1 and events[-1] is summaries[0], events[-1]  # one final summary, last
        assert [e.seq for e in events] == list(range(len(events)))
    assert not [e for e in trace if e.error is not None and e.error.kind == "internal"]

    outcomes = [(e.mode, e.outcome) for e in trace if e.kind == "summary" and e.outcome is not None]
    assert not [o for _, o in outcomes if o.stop_verdict == "infrastructure"]  # every run was judged
    for mode, outcome in outcomes:
        if MODES[mode].hard_gate or policy == "enforce":
            assert outcome.premature_side_effects == 0, (mode, outcome)
        if MODES[mode].hard_gate:  # a hard gate holds gates; a value the cheat wrote can still break an argument rule
            # or carry what the input scanner refuses (an auditing gateway commits it, redacted, and counts it)
            value_breaches = sum(v.startswith(("arg_rule:", "sensitive_input:")) for v in outcome.violations)
            assert outcome.unauthorized_side_effects == value_breaches, (mode, outcome)

    # The cheats landed: cheats no reader takes are the model's errors, gated attempts met the gateway (enforce), and
    # with nothing but an auditing gateway behind them the modes without a hard gate were gotten past it (audit).
    final = {e.error.kind for e in trace if e.kind == "error" and e.error is not None}
    assert "schema" in final and not final & INFRASTRUCTURE_ERRORS
    if policy == "enforce":
        assert sum(o.side_effects_blocked for _, o in outcomes) > 0
    else:
        soft = [o.premature_side_effects for m, o in outcomes if not MODES[m].hard_gate]
        assert not soft or sum(soft) > 0
