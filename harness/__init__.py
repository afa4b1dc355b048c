"""bench's shared runtime: scenarios, store, gateway, models, traces and the run matrix."""

__version__ = "0.1.0"
