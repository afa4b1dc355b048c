"""The in-process executor: a model's cells as asyncio tasks in this process, with the model source opened here."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, TypeVar

from harness.core.signals import RunInterrupted
from harness.matrix.cell.cell_runner import MatrixConfig, matrix_config, run_matrix
from harness.matrix.cell.units import Cell, UnitSink
from harness.matrix.executors.base import EXECUTORS, MatrixRun, OnEvent
from harness.models.choice import open_source
from harness.records.folder import TRACE_FILE
from harness.records.manifest import ManifestLedger
from harness.records.trace import TraceEvent, TraceWriter

T = TypeVar("T")


@EXECUTORS.register("in-process")
class InProcess:
    """The cells as asyncio tasks here, at most ``--concurrency`` at once; the manifest learns what a live endpoint
    taught the client."""

    def run(self, job: MatrixRun, manifest: ManifestLedger) -> None:
        with open_source(
            job.model,
            endpoint=job.endpoint,
            options=job.options,
            concurrency=job.concurrency,
            run_folder=job.folder,
            scenarios=job.scenarios,
            notify=job.notify,
            label=job.label,
        ) as opened:
            if opened.live is not None:
                manifest.amend_live(job.index, opened.live, write=True)
            job.streak.last_error = opened.last_error
            config = matrix_config(
                opened.source,
                job.folder,
                seed=job.seed,
                concurrency=job.concurrency,
                gateway_policy=job.gateway_policy,
                stop=job.stop,
                approver=job.approver,
                model_choice=job.model.describe(),
            )
            try:
                with TraceWriter(job.folder / TRACE_FILE) as writer:
                    run_async(_matrix(job, config, _unit_writer(writer, job.on_event)))
            finally:
                assert config.checkpoints is not None
                config.checkpoints.close()  # SQLite's log folded into checkpoints.db before the folder closes or moves
                learnt = opened.facts()  # what a live endpoint forced the client to adapt
                if learnt and opened.live is not None:
                    manifest.amend_live(job.index, opened.live.model_copy(update=learnt))


def _unit_writer(writer: TraceWriter, on_event: OnEvent | None) -> UnitSink:
    """Writes each finished run's lines in one write, then hands its events to ``on_event``."""

    def sink(events: Sequence[TraceEvent]) -> None:
        writer.write_many(events)
        if on_event is not None:
            for event in events:
                on_event(event)

    return sink


async def _matrix(job: MatrixRun, config: MatrixConfig, units: UnitSink) -> None:
    """The matrix as one task a stop request can cancel; the model source is closed in the same loop."""
    task = asyncio.current_task()
    assert task is not None
    job.stop.attach(task)
    cells: Iterable[Cell] = job.streak.cells(job.cells)
    try:
        await run_matrix(cells, config, None, job.done, units=units)
    except (asyncio.CancelledError, RunInterrupted):  # which one arrives first depends on where the signal landed
        if not job.stop.requested:
            raise
    finally:
        await config.model.aclose()


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """asyncio.run, or, where a loop already runs in this thread (a notebook), the same on a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # handed to the caller's thread below
            box["error"] = exc

    thread = threading.Thread(target=work, name="bench-matrix")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
