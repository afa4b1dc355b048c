"""The gateway's data-leak scan of action inputs (seed 003: every action input passes a DLP scan).

Regular expressions with checks that cut false alarms: a card number must pass the Luhn check, a Chinese
resident id its ISO 7064 check digit; secrets are matched by the shapes providers give their keys. Why not a
detector library: docs/scenarios.md (input scanner).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from harness.scenario.model import InputScanner

REDACTED = "[redacted:{kind}]"

_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_SSN = re.compile(r"(?<!\d)(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?!\d)")
_CN_ID = re.compile(r"(?<![\dA-Za-z])\d{17}[\dXx](?![\dA-Za-z])")
_SECRETS = re.compile(
    r"(?:"
    r"AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{36,}"  # GitHub token
    r"|github_pat_[A-Za-z0-9_]{40,}"
    r"|sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"  # OpenAI / Anthropic style keys
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack token
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"
    r"|(?i:(?:api[_-]?key|secret|token|password|passwd)\s*[:=]\s*['\"]?[A-Za-z0-9/+_.-]{12,})"
    r")"
)


def luhn_ok(digits: str) -> bool:
    """Whether a digit string passes the Luhn check every payment card number carries."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def cn_id_ok(text: str) -> bool:
    """Whether an 18-character Chinese resident id has its ISO 7064 MOD 11-2 check character right."""
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    total = sum(int(c) * w for c, w in zip(text[:17], weights, strict=True))
    return "10X98765432"[total % 11] == text[17].upper()


def _cards(text: str) -> Iterator[re.Match[str]]:
    for found in _CARD.finditer(text):
        digits = re.sub(r"\D", "", found.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            yield found


def _national_ids(text: str) -> Iterator[re.Match[str]]:
    yield from _SSN.finditer(text)
    yield from (found for found in _CN_ID.finditer(text) if cn_id_ok(found.group()))


_DETECTORS: dict[str, Callable[[str], Iterator[re.Match[str]]]] = {
    "card_number": _cards,
    "national_id": _national_ids,
    "secret": _SECRETS.finditer,
}


@dataclass(frozen=True)
class Finding:
    """Sensitive data found in an input: where (a path into the args) and what kind; never the value itself."""

    path: str
    kind: str

    def describe(self) -> str:
        return f"{self.kind} at {self.path}"


def scan(scanner: InputScanner, args: Any) -> list[Finding]:
    """Every string in ``args`` checked with the scanner's detectors: what was found where, in a fixed order."""
    return [Finding(path, kind) for path, text in _strings(args, "") for kind in _kinds_in(scanner, text)]


def redact(scanner: InputScanner, args: Any) -> Any:
    """A copy of ``args`` with every sensitive value replaced by ``[redacted:KIND]``; the rest kept."""
    if isinstance(args, dict):
        return {key: redact(scanner, value) for key, value in args.items()}
    if isinstance(args, list):
        return [redact(scanner, value) for value in args]
    if not isinstance(args, str):
        return args
    for kind in scanner.detect:
        spans = [found.span() for found in _DETECTORS[kind](args)]
        for start, end in sorted(spans, reverse=True):
            args = args[:start] + REDACTED.format(kind=kind) + args[end:]
    return args


def _kinds_in(scanner: InputScanner, text: str) -> list[str]:
    return [kind for kind in scanner.detect if next(iter(_DETECTORS[kind](text)), None) is not None]


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path or "(args)", value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
