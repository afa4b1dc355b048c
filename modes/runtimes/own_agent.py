"""Bring your own agent: ``--mode FILE.py:FACTORY`` or ``--mode MODULE:FACTORY`` runs a user's agent as a mode.

The factory is the user's own code, ``FACTORY(tools, model) -> agent``: bench calls it with its tools (every scenario
action, each running through the gateway) and its model (the ``--model`` source), both in the framework's own
types, and runs the agent it returns on every scenario like any mode, under the runtime adapter of that framework
(``RuntimeMode.own_agent`` says what each one gives and expects). Which framework: ``FRAMEWORK = "langgraph"`` in the
file (or a ``framework`` attribute on the factory), else the one framework the file imports. The mode's name, in
traces and in ``bench resume``, is the value given to ``--mode``; a relative path is read from the current folder.

It lives beside the adapters it picks from and imports, like every mode, only ``harness.core`` of the harness; the
runner loads a user's agent through ``harness/matrix/cell/frameworks.py``'s ``ready_modes``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.core import UserInputError
from modes.base import MODES, mode
from modes.runtimes.base import RuntimeMode, quiet_frameworks

# A file's imports that name a framework other than by its own import name (LangGraph's tools and models are
# LangChain's).
IMPORTED_AS = {"langchain_core": "langgraph", "langchain": "langgraph"}


def is_agent_spec(name: str) -> bool:
    """Whether a ``--mode`` value names a user's factory (``FILE.py:FACTORY``, ``MODULE:FACTORY``), not a mode."""
    return ":" in name


def load_agent(spec: str, file: Path | None = None) -> str:
    """Imports the factory ``spec`` names and registers it as a mode under ``spec``; one line for anything wrong.
    ``file``: where to load it from instead (the recorded path, for a replay or a resume)."""
    where, _, attribute = spec.rpartition(":")
    if not where or not attribute.isidentifier():
        raise UserInputError(f"--mode {spec}: give FILE.py:FACTORY or MODULE:FACTORY (a function name after ':')")
    quiet_frameworks()  # the user's file may import its framework right away
    if file is not None:
        module = _from_file(spec, file)
    elif where.endswith(".py") or "/" in where:
        module = _from_file(spec, Path(where))
    else:
        module = _from_module(spec, where)
    factory = getattr(module, attribute, None)
    if factory is None:
        raise UserInputError(f"--mode {spec}: {where} has no '{attribute}'")
    if not callable(factory):
        raise UserInputError(f"--mode {spec}: '{attribute}' in {where} is not a function (FACTORY(tools, model))")
    adapter = _adapter_for(spec, _framework_of(spec, module, factory))
    problem = adapter.missing()
    if problem is not None:
        raise UserInputError(f"--mode {spec}: {problem}")
    own = type(
        f"OwnAgent_{attribute}",
        (adapter,),
        {
            "__module__": __name__,
            "agent_factory": staticmethod(factory),
            "summary": f"Your agent ({spec}), run by the {adapter.name} adapter.",
        },
    )
    mode(spec)(own)
    return spec


def _from_file(spec: str, path: Path) -> ModuleType:
    if not path.is_file():
        raise UserInputError(f"--mode {spec}: {path}: no such file")
    name = f"bench_own_agent_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise UserInputError(f"--mode {spec}: {path}: not a Python file")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    folder = str(path.resolve().parent)
    added = folder not in sys.path
    if added:  # so the file can import the modules beside it
        sys.path.insert(0, folder)
    try:
        found.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise UserInputError(f"--mode {spec}: {path} does not load ({_said(exc)})") from None
    finally:
        if added:
            sys.path.remove(folder)
    return module


def _from_module(spec: str, name: str) -> ModuleType:
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # a module of the current folder, as python -m finds it
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise UserInputError(f"--mode {spec}: no module named '{name}'") from None
        raise UserInputError(f"--mode {spec}: module '{name}' does not load ({_said(exc)})") from None
    except Exception as exc:
        raise UserInputError(f"--mode {spec}: module '{name}' does not load ({_said(exc)})") from None


def _framework_of(spec: str, module: ModuleType, factory: Any) -> str:
    """The framework the factory builds for: as declared, else the one framework the file imports."""
    declared = getattr(factory, "framework", None) or getattr(module, "FRAMEWORK", None)
    if declared is not None:
        return str(declared)
    frameworks = {cls.framework for cls in MODES.values() if issubclass(cls, RuntimeMode) and cls.framework}
    imported = set()
    for value in vars(module).values():
        origin = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        root = origin.split(".")[0] if isinstance(origin, str) else ""
        imported.add(IMPORTED_AS.get(root, root))
    found = sorted(imported & frameworks)
    if len(found) == 1:
        return found[0]
    what = f"it imports {' and '.join(found)}" if found else f"it imports none of {', '.join(sorted(frameworks))}"
    raise UserInputError(
        f"--mode {spec}: cannot tell which framework '{spec.rpartition(':')[2]}' builds for ({what}); "
        'say so in the file: FRAMEWORK = "langgraph" (or another of those)'
    )


def _adapter_for(spec: str, framework: str) -> type[RuntimeMode]:
    for cls in _adapters():
        if cls.framework == framework:
            return cls
    known = ", ".join(sorted({cls.framework for cls in _adapters()})) or "none yet"
    raise UserInputError(
        f"--mode {spec}: bench cannot run a user's own {framework} agent yet (it can for: {known}; docs/runtimes.md)"
    )


def _adapters() -> list[type[RuntimeMode]]:
    """The registered adapters that run a user's agent, in control-spectrum order."""
    found = [cls for cls in MODES.values() if issubclass(cls, RuntimeMode) and cls.own_agent and not cls.agent_factory]
    return sorted(found, key=lambda cls: (cls.spectrum, cls.name))


def _said(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
