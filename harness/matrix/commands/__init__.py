"""What bench's commands ask of a run folder: resume, replay, the release gate, the sanity check, listings."""

__all__ = [
    "browse",
    "catalog",
    "listing",
    "own_path",
    "reconcile",
    "recorded_replay",
    "release_gate",
    "resume",
    "sanity",
    "trace_diff",
]
