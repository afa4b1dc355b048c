"""One run of the matrix, fresh or resumed from its checkpoint, and the agent frameworks around it."""

__all__ = ["cell_runner", "frameworks", "provenance", "restore", "runtime_resume", "units"]
