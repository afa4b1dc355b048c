"""harness/errors.py's docstring names every exception bench defines, with its module and under its base."""

from __future__ import annotations

import ast
import builtins
import functools
from pathlib import Path

import harness.errors

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "modes", "reports")
BUILTIN_EXCEPTIONS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
}


@functools.cache  # every source file parsed once for the three tests
def defined_exceptions() -> dict[tuple[str, str], str]:
    """(class name, module) -> the name of its first base, for every class that derives from an exception."""
    classes: dict[tuple[str, str], list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    bases = [
                        b.id if isinstance(b, ast.Name) else b.attr
                        for b in node.bases
                        if isinstance(b, ast.Name | ast.Attribute)
                    ]
                    classes[(node.name, module)] = bases
    exceptions: dict[tuple[str, str], str] = {}
    names = set(BUILTIN_EXCEPTIONS)
    grew = True
    while grew:  # a class is an exception when a base is one: builtins first, then ours, to a fixpoint
        grew = False
        for key, bases in classes.items():
            if key not in exceptions and bases and bases[0] in names:
                exceptions[key] = bases[0]
                names.add(key[0])
                grew = True
    return exceptions


def test_every_exception_is_named_in_the_tree_with_its_module():
    doc = harness.errors.__doc__ or ""
    missing = [f"{name} ({module})" for name, module in defined_exceptions() if f"{name} ({module})" not in doc]
    assert not missing, f"add to harness/errors.py's exception tree: {missing}"


def test_the_tree_names_no_exception_that_is_gone():
    named = {(name, module) for name, module in defined_exceptions()}
    tree = [line.split("+-- ", 1)[1] for line in (harness.errors.__doc__ or "").splitlines() if "+-- " in line]
    listed = {(entry.split(" (", 1)[0], entry.split(" (", 1)[1].split(")", 1)[0]) for entry in tree}
    assert listed <= named, f"the tree names exceptions no module defines: {sorted(listed - named)}"


def test_each_exception_sits_under_its_own_base_in_the_tree():
    lines = (harness.errors.__doc__ or "").splitlines()
    depth_of = {}
    for line in lines:
        if "+-- " in line:
            entry = line.split("+-- ", 1)[1]
            depth_of[entry.split(" (", 1)[0] + " (" + entry.split(" (", 1)[1].split(")", 1)[0] + ")"] = line.index(
                "+-- "
            )
    for (name, module), base in defined_exceptions().items():
        if base in BUILTIN_EXCEPTIONS:
            continue
        (parent,) = [key for key in depth_of if key.startswith(f"{base} (")]
        assert depth_of[f"{name} ({module})"] == depth_of[parent] + 4, f"{name} is not drawn under {parent}"
