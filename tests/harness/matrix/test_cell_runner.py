"""The runner: bounded workers over a lazy matrix, per-run seeds, errors that end one run only, and a stop or a
cancellation that gives the run in flight an ``interrupted`` summary and stops the matrix."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

import pytest

from harness.core.clock import FakeClock
from harness.core.model_port import ModelReply, ModelRequest
from harness.core.outcome import ModeResult
from harness.core.signals import RunInterrupted, StopRequest
from harness.errors import ModelError
from harness.matrix.cell.cell_runner import MatrixConfig, cells_for, run_cell, run_matrix, run_seed
from harness.matrix.cell.units import Cell
from harness.records.trace import TraceEvent, Usage
from modes.base import MODES, Mode
from tests.helpers.answers import Answers, step
from tests.helpers.registries import restored
from tests.helpers.units import REFUND, THRESHOLD, scenario

S = scenario(REFUND)
T = scenario(THRESHOLD)


def finish() -> ModelReply:
    return ModelReply(proposal={"action": "finish", "args": {}}, text="", usage=Usage(), latency_ms=1.0)


class Gate:
    """A model source whose calls wait until ``width`` of them are in flight at once: shows the bound is reached,
    and (with the count) never passed. A call also stops the matrix when told to."""

    label = "test:gate"

    def __init__(self, width: int, stop: StopRequest | None = None, stop_at: int | None = None):
        self.width, self.stop, self.stop_at = width, stop, stop_at
        self.in_flight = self.most = self.calls = 0
        self.full = asyncio.Event()
        self.seeds: list[int] = []

    def for_run(self, seed: int) -> Gate:
        self.seeds.append(seed)
        return self

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.calls += 1
        if self.stop is not None and self.calls == self.stop_at:
            self.stop.signum = 2
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight >= self.width:
            self.full.set()
        await self.full.wait()
        self.in_flight -= 1
        return finish()

    async def aclose(self) -> None:
        return None


def config(model, **changes) -> MatrixConfig:
    counter = itertools.count(1)
    return MatrixConfig(model=model, clock=FakeClock(), new_run_id=lambda: f"run-{next(counter)}", **changes)


def matrix(cells, cfg) -> tuple[int, list[TraceEvent], list[tuple[Cell, str]]]:
    events: list[TraceEvent] = []
    done: list[tuple[Cell, str]] = []
    finished = asyncio.run(run_matrix(cells, cfg, events.append, lambda c, o: done.append((c, o.status))))
    return finished, events, done


@pytest.mark.parametrize("concurrency", [1, 3])
def test_workers_run_at_most_concurrency_runs_at_once_and_reach_it(concurrency):
    model = Gate(concurrency)
    finished, events, done = matrix(cells_for([S], ["react"], 7), config(model, concurrency=concurrency))
    assert finished == 7 and len(done) == 7 and model.most == concurrency
    assert sum(e.kind == "summary" for e in events) == 7


def test_a_concurrency_below_one_still_runs_one_worker():
    finished, _, _ = matrix(cells_for([S], ["react"], 2), config(Gate(1), concurrency=0))
    assert finished == 2


def test_cells_are_pulled_lazily_as_workers_free_up():
    pulled: list[int] = []
    model = Gate(2)

    def cells() -> Iterator[Cell]:
        for trial in range(1, 6):
            pulled.append(trial)
            yield Cell(S, "react", trial)

    pulled_when_first_done: list[int] = []

    def on_done(cell, outcome) -> None:
        if not pulled_when_first_done:
            pulled_when_first_done.append(len(pulled))

    asyncio.run(run_matrix(cells(), config(model, concurrency=2), lambda e: None, on_done))
    assert pulled_when_first_done == [2] and pulled == [1, 2, 3, 4, 5]


def test_the_matrix_order_is_scenario_then_mode_then_trial():
    cells = list(cells_for([S, T], ["react", "workflow"], 2))
    assert [(c.scenario.id, c.mode, c.trial) for c in cells] == [
        (s, m, t) for s in ("unit_refund", "unit_threshold") for m in ("react", "workflow") for t in (1, 2)
    ]


def test_a_runs_seed_depends_on_the_matrix_seed_and_its_cell_only():
    cell = Cell(S, "react", 1)
    assert run_seed(0, cell) == run_seed(0, Cell(S, "react", 1))
    others = {run_seed(1, cell), run_seed(0, Cell(S, "react", 2)), run_seed(0, Cell(S, "workflow", 1))}
    others.add(run_seed(0, Cell(T, "react", 1)))
    assert run_seed(0, cell) not in others and len(others) == 4
    assert 0 <= run_seed(0, cell) < 2**64


def test_each_run_gets_its_model_for_its_own_seed_and_a_new_run_id():
    model = Gate(1)
    _, events, _ = matrix(cells_for([S], ["react"], 2), config(model, seed=5))
    assert model.seeds == [run_seed(5, Cell(S, "react", 1)), run_seed(5, Cell(S, "react", 2))]
    starts = [e for e in events if e.kind == "run_start"]
    assert [e.run_id for e in starts] == ["run-1", "run-2"]
    assert starts[0].detail is not None and starts[0].detail["seed"] == model.seeds[0]
    assert starts[0].detail["gateway_policy"] == "enforce" and starts[0].detail["limits"] == S.limits.model_dump()


def test_a_model_error_ends_that_run_only_and_the_matrix_goes_on():
    cfg = config(Answers(step("read_claim"), ModelError("parse", "not JSON")))
    finished, events, done = matrix(cells_for([S], ["react"], 2), cfg)
    assert finished == 2 and [status for _, status in done] == ["error", "error"]
    error = next(e for e in events if e.kind == "error")
    assert (error.step, error.decision_maker, error.result, error.error.kind if error.error else None) == (
        2,
        "runtime",
        "run_error",
        "parse",
    )
    summary = next(e for e in events if e.kind == "summary")
    assert summary.outcome is not None and summary.outcome.stop_verdict == "failed_closed"
    assert summary.outcome.errors == {"parse": 1}


def test_an_infrastructure_error_leaves_the_run_unjudged():
    outcome = asyncio.run(run_cell(Cell(S, "react", 1), config(Answers(ModelError("network", "down"))), lambda e: None))
    assert (outcome.status, outcome.stop_verdict) == ("error", "infrastructure")


def test_a_bug_in_a_mode_ends_its_run_as_an_internal_error():
    class Broken(Mode):
        async def run(self, ctx) -> ModeResult:
            ctx.act("read_claim", {}, allowed=["read_claim"], step=1)
            raise KeyError("oops")

    events: list[TraceEvent] = []
    with restored(MODES):
        MODES.add("unit_broken", Broken)
        outcome = asyncio.run(run_cell(Cell(S, "unit_broken", 1), config(Answers()), events.append))
    assert (outcome.status, outcome.stop_verdict, outcome.errors) == ("error", "infrastructure", {"internal": 1})
    error = next(e for e in events if e.kind == "error")
    assert error.error is not None and error.error.message == "KeyError: 'oops'" and error.step == 0


def test_a_suspension_is_the_runs_stop():
    outcome = asyncio.run(
        run_cell(
            Cell(S, "react_guardrails", 1), config(Answers(step("read_claim"), step("ask_manager"))), lambda e: None
        )
    )
    assert (outcome.status, outcome.suspended_at) == ("suspended", "manager_approval")


def test_a_stop_request_gives_the_run_in_flight_an_interrupted_summary_and_stops_the_matrix():
    stop = StopRequest()
    model = Gate(1, stop=stop, stop_at=2)
    events: list[TraceEvent] = []
    with pytest.raises(RunInterrupted):
        asyncio.run(run_matrix(cells_for([S], ["react"], 5), config(model, stop=stop), events.append))
    summaries = [e for e in events if e.kind == "summary"]
    assert [s.run_id for s in summaries] == ["run-1", "run-2"]
    assert summaries[0].outcome is not None and summaries[0].outcome.status == "finished"
    interrupted = summaries[1].outcome
    assert interrupted is not None and (interrupted.status, interrupted.stop_verdict) == (
        "interrupted",
        "infrastructure",
    )
    assert {e.run_id for e in events} == {"run-1", "run-2"}  # no run started after the stop


def test_a_cancelled_matrix_gives_the_run_in_flight_an_interrupted_summary():
    class Hangs:
        label = "test:hangs"
        started = asyncio.Event()

        def for_run(self, seed):
            return self

        async def complete(self, request):
            self.started.set()
            await asyncio.Event().wait()  # never answers: only a cancellation ends it

        async def aclose(self):
            return None

    events: list[TraceEvent] = []

    async def go():
        model = Hangs()
        model.started = asyncio.Event()
        task = asyncio.create_task(run_matrix(cells_for([S], ["react"], 3), config(model), events.append))
        await model.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    summaries = [e for e in events if e.kind == "summary"]
    assert len(summaries) == 1 and summaries[0].outcome is not None
    assert summaries[0].outcome.status == "interrupted"
