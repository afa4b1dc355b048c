"""Looks for any piece of a key of 8 characters or more in a text, in every spelling, independently of the scrubber.

Brute force on purpose, so that it shares no idea with ``harness.models.scrub``: every 8-character window
of the key is spelled every way an endpoint could echo it (plain, ``\\uXXXX`` and ``%XX`` and ``\\xXX`` in
either case, hex in either case, base64 and URL-safe base64 at the three alignments) and searched for in
the text as it is, decoded (JSON lines, URL-encoding), and with its line breaks taken out. ``folded_leaks`` looks
for the key's letters and digits alone, case-folded, forwards and backwards, in the text's letters and digits
alone (after NFKC and HTML entities): upper-case, spaced, dashed, zero-width, fullwidth and reversed echoes.
"""

from __future__ import annotations

import base64
import html
import json
import unicodedata
from pathlib import Path
from urllib.parse import unquote

PIECE = 8


def windows(key: str) -> list[str]:
    return [key[i : i + PIECE] for i in range(len(key) - PIECE + 1)]


def base64_of(piece: bytes) -> set[str]:
    """The characters of the piece's base64 made of its own bits alone, at each alignment, both alphabets."""
    found = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + piece + b"\0\0").decode()
        inner = [i for i in range(len(encoded)) if (6 * i) // 8 >= offset and (6 * i + 5) // 8 < offset + len(piece)]
        core = encoded[inner[0] : inner[-1] + 1]
        found |= {core, core.replace("+", "-").replace("/", "_")}
    return found


def spellings(piece: str) -> dict[str, set[str]]:
    """Every spelling of one piece, by name; hex and escapes in lower and upper case."""
    raw = piece.encode()
    forms = {
        "plain": {piece},
        "json escape": {"".join(f"\\u{ord(c):04x}" for c in piece), "".join(f"\\u{ord(c):04X}" for c in piece)},
        "url encoding": {"".join(f"%{b:02x}" for b in raw), "".join(f"%{b:02X}" for b in raw)},
        "\\x escape": {"".join(f"\\x{b:02x}" for b in raw), "".join(f"\\x{b:02X}" for b in raw)},
        "hex": {raw.hex(), raw.hex().upper()},
        "base64": base64_of(raw),
    }
    return forms


def views(text: str) -> list[str]:
    """The text as written, with each JSON line decoded, URL-decoded, and each of those without line breaks."""
    found = [text, unquote(text)]
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        found.append(json.dumps(value, ensure_ascii=False))
    joined = [v.replace("\r", "").replace("\n", "").replace("\\r", "").replace("\\n", "") for v in found]
    return found + joined


def leaks(text: str, key: str) -> list[str]:
    """Every (spelling, piece) of the key found in ``text``; empty when no piece of 8 characters shows."""
    seen = views(text)
    found = []
    for piece in windows(key):
        for name, forms in spellings(piece).items():
            if any(form in view for form in forms for view in seen):
                found.append(f"{name}: {piece}")
    return found


def leaks_in_folder(folder: Path, key: str) -> dict[str, list[str]]:
    """The leaks of every file under ``folder``, by file name; only files that leak are listed."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        where = leaks(path.read_bytes().decode("utf-8", errors="replace"), key)
        if where:
            found[str(path.relative_to(folder))] = where
    return found


def _letters_and_digits(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKC", html.unescape(text)).casefold() if c.isalnum())


def folded_leaks(text: str, key: str) -> list[str]:
    """Every 8-character piece of the key's letters and digits (case-folded, either direction) in ``text``'s."""
    folded = _letters_and_digits(key)
    seen = [_letters_and_digits(view) for view in views(text)]
    return [
        f"{direction}: {piece}"
        for direction, spelled in (("forwards", folded), ("backwards", folded[::-1]))
        for piece in windows(spelled)
        if any(piece in view for view in seen)
    ]
