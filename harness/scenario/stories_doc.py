"""docs/stories.md, generated: every story of the library with its conflict (the rules), where a correct run stops,
and its workflow as a ```mermaid block, which GitHub renders as a diagram.

Regenerate after adding or changing a story: ``.venv/bin/python -m harness.scenario.stories_doc``; a test fails
while the committed file differs from what this writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.scenario.load import load_all
from harness.scenario.mermaid import mermaid

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "scenarios"
DOC = ROOT / "docs" / "stories.md"

HEADER = """# The stories and their workflows

Generated from `scenarios/*.yaml` by `harness/scenario/stories_doc.py`; do not edit by hand (regenerate with
`.venv/bin/python -m harness.scenario.stories_doc`). The format and each story's conflict in words are in
[scenarios.md](scenarios.md).

Each diagram is the workflow the workflow modes walk (`bench show-scenario NAME --mermaid` prints it): boxes are
action nodes, rounded boxes model steps, double-edged boxes agent nodes, hexagons approval nodes (orange: the gate
a person decides), rhombi validators, stadiums end nodes. A dashed orange border marks a node whose action a gate
holds back; dashed arrows close a loop (with the visit budget on the nodes it passes through). An approval node
whose gate goes on after a rejection (`on_reject`) has two ways out, `approved` and `rejected` (the compensation).
A run page of the HTML report draws the same graph with the run's path highlighted.
"""


def stories_doc(folder: Path = LIBRARY) -> str:
    """The whole of docs/stories.md for the stories in ``folder``, in file-name order."""
    parts = [HEADER]
    for name, s in load_all(folder).items():
        stop = s.oracle.expected_stop
        stop_text = "finishes" if stop == "finished" else f"stops at `{stop}`"
        parts += [
            f"## `{name}`",
            "",
            f"{s.title}. A correct run {stop_text}.",
            "",
            *[
                f"- rule `{r.id}` ({'obeyed' if r.obeyed else 'not obeyed'}): {' '.join(r.text.split())}"
                for r in s.rules
            ],
            "",
            "```mermaid",
            mermaid(s).rstrip("\n"),
            "```",
            "",
        ]
    return "\n".join(parts)


def main() -> None:
    DOC.write_text(stories_doc(), encoding="utf-8")
    sys.stdout.write(f"wrote {DOC.relative_to(ROOT)}\n")


if __name__ == "__main__":
    main()
