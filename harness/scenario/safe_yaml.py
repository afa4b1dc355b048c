"""Reads a YAML file someone else wrote into plain JSON-like data, with every cost bounded before it is paid.

A scenario file is a story, not a data set: it may hold at most ``MAX_FILE_BYTES`` of UTF-8 text, and
its YAML, with every alias expanded at each use, at most ``MAX_NODES`` values, ``MAX_TEXT`` characters
of scalar text and ``MAX_DEPTH`` levels of nesting. The alias graph is measured once per distinct node
before anything is built, so an alias bomb ("billion laughs") or a merge-key bomb costs what its file
costs, and a recursive alias is refused. The values that come out are JSON data (strings, numbers of at
most 64 bits, booleans, null, lists, string-keyed mappings): a date stays the string it was written as,
and a tag that builds anything else (``!!binary``, ``!!set``, ``!!timestamp``) is refused. A key given
twice in one mapping is refused too, since YAML would silently keep only the last one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness import files
from harness.errors import ScenarioError

MAX_FILE_BYTES = 1024 * 1024
MAX_NODES = 100_000  # the library's largest scenario has about 500
MAX_TEXT = 4 * MAX_FILE_BYTES  # scalar characters after expansion: a file without aliases holds at most its size
MAX_DEPTH = 100  # far past any scenario, far below what recursive validation and serialisation can take
MAX_INT_DIGITS = 20  # 2**63 has 19 digits; longer text is no 64-bit number (and past 4,300 digits no int at all)
INT_BOUND = 2**63

_TAG = "tag:yaml.org,2002:"
JSON_TAGS = frozenset(_TAG + name for name in ("str", "int", "float", "bool", "null", "seq", "map"))
MERGE_TAG = _TAG + "merge"
_SURROGATE = re.compile("[\ud800-\udfff]")


def bounded_loader(base: Any) -> Any:
    """``base`` (a safe loader class) without implicit timestamps (JSON has none), with 64-bit integers only."""

    class BoundedLoader(base):
        yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
            first: [(tag, pattern) for tag, pattern in resolvers if tag != _TAG + "timestamp"]
            for first, resolvers in base.yaml_implicit_resolvers.items()
        }

        def construct_bounded_int(self, node: ScalarNode) -> int:
            digits = str(node.value).replace("_", "").lstrip("+-")
            value: int | None = self.construct_yaml_int(node) if len(digits) <= MAX_INT_DIGITS else None
            if value is None or not -INT_BOUND <= value < INT_BOUND:
                raise ConstructorError(None, None, "an integer past 64 bits; quote it if it is text", node.start_mark)
            return value

    BoundedLoader.add_constructor(_TAG + "int", BoundedLoader.construct_bounded_int)
    return BoundedLoader


PURE_LOADER = bounded_loader(yaml.SafeLoader)
# libyaml when it is installed (issue 13: several times faster), else the pure-Python parser. Both compose
# the same nodes, and everything that keeps the load safe works on those nodes.
LOADER = bounded_loader(yaml.CSafeLoader) if getattr(yaml, "__with_libyaml__", False) else PURE_LOADER


def read_yaml(path: Path, shown: str) -> Any:
    """The data of the YAML file at ``path``; any problem raises ``ScenarioError`` naming ``shown`` (one line)."""
    text = read_text(path, shown)
    loader = LOADER(text)
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _measure(node)
            return loader.construct_document(node)
        except _Refused as refused:
            raise _error(shown, _where(refused.node), refused.message) from None
        except RecursionError:
            raise _error(shown, "", "nested too deeply to read") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            syntax = "" if isinstance(exc, ConstructorError) else "YAML syntax error: "
            raise _error(shown, where, syntax + problem) from None
        except (ValueError, OverflowError) as exc:  # a value the constructor cannot build (a bad !!float ...)
            raise _error(shown, "", f"a value cannot be read: {exc}") from None
    finally:
        loader.dispose()


def read_text(path: Path, shown: str) -> str:
    """The file's text: a regular file (a FIFO or a device is never opened for reading), bounded, UTF-8."""
    try:
        return files.read_text(path, MAX_FILE_BYTES)
    except files.Unreadable as exc:
        hint = {"larger": "; a scenario file must stay under that", "not UTF-8": "; save the file as UTF-8"}
        extra = next((text for start, text in hint.items() if exc.reason.startswith(start)), "")
        raise _error(shown, exc.where, exc.reason + extra) from None


class _Refused(Exception):
    def __init__(self, node: Node, message: str):
        self.node, self.message = node, message


def _measure(root: Node) -> None:
    """Measures the document as it would be once built, each distinct node once; refuses it past a bound.

    For each node: how many values it expands to, how much scalar text, how deep. Aliases make the
    node graph a DAG (or, refused here, a cycle), so sizes are summed bottom-up with memoisation
    and the walk is iterative: neither its time nor its stack depends on how far aliases expand.
    """
    sizes: dict[int, tuple[int, int, int]] = {}  # id(node) -> (values, text, depth) once expanded
    open_nodes: set[int] = set()  # on the current path: meeting one again is a recursive alias
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            children = _children(node)
            values = 1 + sum(sizes[id(child)][0] for child in children)
            text = sum(sizes[id(child)][1] for child in children)
            depth = 1 + max((sizes[id(child)][2] for child in children), default=0)
            if values > MAX_NODES:
                raise _Refused(node, f"expands to more than {MAX_NODES:,} YAML values (aliases counted at each use)")
            if text > MAX_TEXT:
                raise _Refused(
                    node, f"expands to more than {MAX_TEXT // MAX_FILE_BYTES} MiB of text (aliases counted at each use)"
                )
            if depth > MAX_DEPTH:
                raise _Refused(node, f"nested deeper than {MAX_DEPTH} levels")
            sizes[key] = (values, text, depth)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise _Refused(node, "an alias refers to a node that contains it (a recursive structure)")
        if isinstance(node, ScalarNode):
            _check_scalar(node)
            sizes[key] = (1, len(node.value), 1)
            continue
        if node.tag not in JSON_TAGS:
            raise _Refused(node, f"the tag {_short_tag(node.tag)} builds something that is not JSON data")
        if isinstance(node, MappingNode):
            _check_keys(node)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _check_scalar(node: ScalarNode) -> None:
    if node.tag not in JSON_TAGS and node.tag != MERGE_TAG:
        raise _Refused(node, f"the tag {_short_tag(node.tag)} builds something that is not JSON data; quote the value")
    if _SURROGATE.search(node.value):
        raise _Refused(node, "a lone surrogate escape is not valid Unicode")


def _check_keys(node: MappingNode) -> None:
    """Keys must be strings (or ``<<`` merges), each given once: YAML would silently keep the last one."""
    seen: set[str] = set()
    for key, _value in node.value:
        if isinstance(key, ScalarNode) and key.tag == MERGE_TAG:
            continue
        if not isinstance(key, ScalarNode) or key.tag != _TAG + "str":
            shown = key.value if isinstance(key, ScalarNode) else "a list or mapping"
            raise _Refused(key, f"the key {shown!r} is not a string; quote it")
        if key.value in seen:
            raise _Refused(key, f"the key '{key.value}' is given twice in one mapping")
        seen.add(key.value)


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_TAG) if tag.startswith(_TAG) else tag


def _where(node: Node) -> str:
    mark = node.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "YAML"


def _error(shown: str, field: str, message: str) -> ScenarioError:
    return ScenarioError(shown, field, " ".join(message.split()))
