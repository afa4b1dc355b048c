"""What ``bench report`` writes and where: checked by the CLI before it starts anything (no pandas, no matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal, get_args

from harness.errors import UserInputError

ReportFormat = Literal["md", "csv", "latex", "html"]
FORMATS: tuple[str, ...] = get_args(ReportFormat)


def parse_formats(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in FORMATS:
            raise UserInputError(f"--format: unknown format '{name}'; known: {', '.join(FORMATS)}")
    if not names:
        raise UserInputError(f"--format: give at least one of {', '.join(FORMATS)}")
    return list(dict.fromkeys(names))


def default_out(paths: Sequence[Path]) -> Path:
    first = Path(paths[0])
    return (first if first.is_dir() else first.parent) / "report"
