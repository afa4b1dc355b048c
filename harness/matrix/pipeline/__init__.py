"""A run spec to a closed run folder: the spec, the matrix planned and driven, a cut matrix continued, exit codes."""

__all__ = ["driver", "exit_status", "spec", "unfinished"]
