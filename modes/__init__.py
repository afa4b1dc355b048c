"""Control modes, one module each, registered by name. Each is imported here explicitly."""

from modes import plan_execute, plan_validated, react, react_guarded, workflow  # noqa: F401  (registers)
from modes.base import MODES, Mode, get_mode, mode, select_modes

__all__ = ["MODES", "Mode", "get_mode", "mode", "select_modes"]
