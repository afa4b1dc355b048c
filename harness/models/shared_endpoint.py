"""A live endpoint shared by worker processes: the driver opens it once, every worker asks it with its own client.

The driver does once for the whole matrix what opening a live source does: it starts the bundled model's server
(one for every worker, never one each), checks the endpoint, chooses the provider profile and says all of it in the
manifest. Each worker gets the checked ``LiveConfig`` with its share of ``--concurrency`` and records every exchange
into the unit it belongs to (``UnitRecordings``), so the driver, the one writer of the folder, writes the unit's
``recording.jsonl`` lines with its trace lines. What the endpoint taught each worker's client (the capability steps
down) is merged for the manifest at the end (``merged_facts``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.models.choice import Live, ModelChoice, OpenSource, SourceSetup
from harness.records.manifest import LiveManifest

if TYPE_CHECKING:
    from harness.models.config import Endpoint, LiveOptions
    from harness.models.live import LiveConfig
    from harness.models.recording import RecordEntry
    from harness.scenario.model import Scenario

UnitKey = tuple[str, str, int]  # scenario, mode, trial


@dataclass(frozen=True)
class SharedEndpoint:
    """The checked endpoint every worker asks, and what the manifest says about it."""

    config: LiveConfig
    live: LiveManifest


@contextmanager
def shared_endpoint(
    choice: ModelChoice,
    *,
    endpoint: Endpoint | None,
    options: LiveOptions,
    concurrency: int,
    run_folder: Path,
    scenarios: Sequence[Scenario] = (),
    notify: Callable[[str], None] = lambda line: None,
    checked: LiveConfig | None = None,
) -> Iterator[SharedEndpoint]:
    """The endpoint of a live or local ``choice``, checked once; a local server runs until the block ends.
    ``checked``: an endpoint the caller started and checked (the local model's servers on Ray's nodes)."""
    kind = choice.source_kind
    assert isinstance(kind, Live), f"{choice.describe()} is no live model"
    setup = SourceSetup(endpoint, options, concurrency, run_folder, scenarios, notify)
    with ExitStack() as stack:
        config, live = kind.prepare(stack, setup, checked)
        yield SharedEndpoint(config, live)


class UnitRecordings:
    """Each run's recorded exchanges as ``recording.jsonl`` lines, kept until its unit is handed on."""

    def __init__(self) -> None:
        self._lines: defaultdict[UnitKey, list[bytes]] = defaultdict(list)

    def __call__(self, entry: RecordEntry) -> None:
        line = entry.__pydantic_serializer__.to_json(entry) + b"\n"
        self._lines[(entry.scenario, entry.mode, entry.trial)].append(line)

    def take(self, key: UnitKey) -> bytes:
        """The unit's lines, in the order its requests were answered; forgotten here."""
        return b"".join(self._lines.pop(key, ()))


@contextmanager
def worker_source(
    config: LiveConfig,
    concurrency: int,
    record: UnitRecordings,
    notify: Callable[[str], None],
    options: LiveOptions | None = None,
) -> Iterator[OpenSource]:
    """A worker's own client for the shared endpoint, at most ``concurrency`` requests in flight, every exchange
    recorded into ``record`` (with ``--record-through``, what the earlier recording holds is served from it)."""
    from harness.models.choice import through_for
    from harness.models.live import LiveSource
    from harness.models.recording import RecordingSource

    live = LiveSource(replace(config, concurrency=concurrency), notify=notify)
    through = through_for(options, live) if options is not None else None
    yield OpenSource(
        RecordingSource(live, record, profile=config.provider, through=through),
        "live",
        facts=live.manifest_facts,
        last_error=lambda: live.last_error,
    )


def merged_facts(reports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The workers' learnt facts as one: each step down once (what changed, from what to what; the first run that
    met it), and the wire settings of the worker that adapted most (each worker's client steps down on its own
    first refusal, as one process does once for the matrix)."""
    adaptations: list[Any] = []
    seen: set[str] = set()
    for report in reports:
        for adaptation in report.get("adaptations", ()):
            key = json.dumps([adaptation.get(name) for name in ("what", "before", "after")], default=str)
            if key not in seen:
                seen.add(key)
                adaptations.append(adaptation)
    if not reports:
        return {}
    most = max(reports, key=lambda report: len(report.get("adaptations", ())))
    return {**most, "adaptations": adaptations}
