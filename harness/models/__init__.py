"""The adapters behind the model port: scripted policies, recorded replays, live endpoints and the bundled model.

Only this package talks to the network. Its face is the model selector (harness/models/choice.py): ``choose``
reads a ``--model`` value and ``open_source`` turns the choice into a running source for a run.
"""

from harness.models.choice import (
    ENV_VARS,
    OWN_ENDPOINT,
    RECORDED_MODEL,
    ModelChoice,
    OpenSource,
    choose,
    endpoint_from_env,
    model_label,
    open_source,
)
from harness.models.config import Endpoint, LiveOptions

__all__ = [
    "ENV_VARS",
    "OWN_ENDPOINT",
    "RECORDED_MODEL",
    "Endpoint",
    "LiveOptions",
    "ModelChoice",
    "OpenSource",
    "choose",
    "endpoint_from_env",
    "model_label",
    "open_source",
]
