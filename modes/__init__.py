"""Control modes, one module each, registered by name. Each is imported here explicitly."""

from modes import (  # noqa: F401  (registers)
    hybrid_planner,
    plan_execute,
    plan_execute_replan,
    plan_validated,
    react,
    react_guardrails,
    workflow,
    workflow_fallback_react,
    workflow_param,
    workflow_routed,
)
from modes.base import MODES, RENAMED, Mode, get_mode, mode, select_modes
from modes.runtimes import (
    langgraph_react,  # noqa: F401  (registers)
    langgraph_workflow,  # noqa: F401  (registers)
    openai_agents,  # noqa: F401  (registers)
    pydantic_ai,  # noqa: F401  (registers)
)

__all__ = ["MODES", "RENAMED", "Mode", "get_mode", "mode", "select_modes"]
