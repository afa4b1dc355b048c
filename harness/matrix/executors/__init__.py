"""Many runs at once: a matrix's work units run in this process, in worker processes or on a Ray cluster."""

__all__ = ["frames", "ray_executor", "ray_model_servers", "unit_batch", "unit_ledger", "workers"]
