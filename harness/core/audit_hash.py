"""The audit hashes of a gateway record (seed 003): sha256 of the canonical JSON of a call's input and its result.

Canonical JSON is sorted keys, no spaces, non-ASCII kept, so the same value gives the same hash in the run and
when recomputed from the trace line later (``bench gate-check`` does: docs/trace-schema.md, audit hashes).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """The one text of a JSON value that is hashed: sorted keys, compact separators, unescaped non-ASCII."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def audit_hash(value: Any) -> str:
    """``sha256:`` and the hex digest of the value's canonical JSON."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
