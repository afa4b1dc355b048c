"""What a run folder holds, written and read back: the trace (one event a line), the manifest, the checkpoints of
suspended runs, the folder and its lock, and the lenient timeline reader that opens any trace, whatever wrote it."""

from harness.records.checkpoint import CHECKPOINT_FILE, Checkpoint, CheckpointStore, Decision, HumanDecision
from harness.records.folder import LOCK_FILE, TRACE_FILE, RunFolder
from harness.records.manifest import MANIFEST_FILE, LiveManifest, Manifest, read_manifest
from harness.records.timeline import Ending, RunRef, Timeline, list_runs, timelines
from harness.records.trace import (
    SCHEMA_VERSION,
    ErrorInfo,
    RunOutcome,
    TraceEvent,
    TraceReadReport,
    TraceWriter,
    Usage,
    read_events,
    read_records,
)

__all__ = [
    "CHECKPOINT_FILE",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "SCHEMA_VERSION",
    "TRACE_FILE",
    "Checkpoint",
    "CheckpointStore",
    "Decision",
    "Ending",
    "ErrorInfo",
    "HumanDecision",
    "LiveManifest",
    "Manifest",
    "RunFolder",
    "RunOutcome",
    "RunRef",
    "Timeline",
    "TraceEvent",
    "TraceReadReport",
    "TraceWriter",
    "Usage",
    "list_runs",
    "read_events",
    "read_manifest",
    "read_records",
    "timelines",
]
