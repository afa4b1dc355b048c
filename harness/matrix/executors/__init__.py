"""Many runs at once: a matrix's work units run in this process, in worker processes or on a Ray cluster.

Each executor registers itself in ``EXECUTORS`` as its module is imported; this face imports all three.
"""

from harness.matrix.executors import in_process, ray_executor, workers
from harness.matrix.executors.base import EXECUTORS, Executor, MatrixRun

__all__ = ["EXECUTORS", "Executor", "MatrixRun", "in_process", "ray_executor", "workers"]
