"""Keeps the API key out of everything bench writes or prints, in every form an endpoint could echo it in.

A key is matched as plain text, JSON-escaped (``\\u0073`` or ``\\"`` per character, mixed freely, as
raw body text or inside a decoded string), URL-encoded (``%73``), base64 (standard and URL-safe, at
any alignment inside a longer base64 text), and any prefix of 8 characters or more (a key cut by a
truncation). Only strings are scrubbed: numbers are never altered, so usage counts survive (an object
key changes only if it holds the secret itself). A key that is too short or too common to be a secret
(``EMPTY``, ``none``,
``ollama``, ``sk-no-key-required``, anything under 12 characters) is sent but never scrubbed: doing so
would corrupt model text and token counts while protecting nothing.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 12
PREFIX_LENGTH = 8  # a prefix this long or longer is treated as the key itself
# Values the servers' own documentation and examples use when no key is checked (lower-cased).
PLACEHOLDERS = frozenset(
    {
        "empty",
        "none",
        "null",
        "ollama",
        "sk-no-key-required",
        "no-key",
        "nokey",
        "local",
        "localhost",
        "dummy",
        "test",
        "token",
        "key",
        "api-key",
        "apikey",
        "sk-xxx",
        "sk-dummy",
        "sk-local",
        "not-needed",
        "not-used",
        "unused",
        "placeholder",
        "changeme",
        "secret",
        "password",
        "lm-studio",
        "vllm",
        "llamacpp",
        "llama.cpp",
        "sk-1234",
        "sk-placeholder",
        "x",
        "-",
        "anything",
    }
)
# JSON's short escapes, the other ways a JSON text may spell these characters.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/"}


def is_placeholder(key: str) -> bool:
    """True when ``key`` is too short or too common to be a secret worth scrubbing."""
    return len(key) < MIN_SECRET_LENGTH or key.strip().lower() in PLACEHOLDERS


def _char_pattern(char: str) -> str:
    """Every spelling of one character of the key: itself, ``\\uXXXX`` (any case), ``%XX``, a short JSON escape."""
    code = ord(char)
    options = [re.escape(char)]
    if code <= 0xFFFF:
        hex4 = f"{code:04x}"
        options.append("\\\\u" + "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in hex4))
    for byte in char.encode("utf-8"):
        hex2 = f"{byte:02x}"
        options.append("%" + "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in hex2))
    if char in _SHORT_ESCAPES:
        options.append(re.escape(_SHORT_ESCAPES[char]))
    if char == " ":
        options.append(r"\+")  # form encoding
    return "(?:" + "|".join(options) + ")"


def _base64_cores(key: bytes) -> list[str]:
    """The parts of the key's base64 form that do not depend on what surrounds it, at each of the three alignments."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + key + b"\0\0").decode("ascii")
        # Character i carries bits 6i..6i+5 of the byte stream; keep those made of key bytes only.
        keep = [i for i in range(len(encoded)) if (6 * i) // 8 >= offset and (6 * i + 5) // 8 < offset + len(key)]
        if keep:
            core = encoded[keep[0] : keep[-1] + 1]
            if len(core) >= PREFIX_LENGTH:
                cores.append(core)
    return cores


@dataclass(frozen=True)
class Scrubber:
    """Replaces the key wherever it appears in strings; a no-op for an empty or placeholder key."""

    key: str = field(default="", repr=False)

    @property
    def active(self) -> bool:
        return bool(self.key) and not is_placeholder(self.key)

    @property
    def placeholder(self) -> bool:
        """A key was given but is treated as a placeholder (sent, not scrubbed)."""
        return bool(self.key) and is_placeholder(self.key)

    def _pattern(self) -> re.Pattern[str] | None:
        cached = _PATTERNS.get(self.key)
        if cached is not None or not self.active:
            return cached
        chars = [_char_pattern(c) for c in self.key]
        # The whole key, or any prefix of PREFIX_LENGTH characters or more: nested optional groups let
        # the regex take as much of the key as is there.
        tail = ""
        for piece in reversed(chars[PREFIX_LENGTH:]):
            tail = f"(?:{piece}{tail})?"
        alternatives = ["".join(chars[:PREFIX_LENGTH]) + tail]
        encoded = self.key.encode("utf-8")
        for core in _base64_cores(encoded):
            alternatives.append(re.escape(core))
            urlsafe = core.replace("+", "-").replace("/", "_")
            if urlsafe != core:
                alternatives.append(re.escape(urlsafe))
        pattern = re.compile("|".join(alternatives))
        _PATTERNS[self.key] = pattern
        return pattern

    def text(self, value: str) -> str:
        """``value`` with every spelling of the key (or a prefix of it) replaced."""
        pattern = self._pattern()
        if pattern is None or not value:
            return value
        return pattern.sub(REDACTED, value)

    def mentions(self, text: str) -> bool:
        """Whether ``text`` (a body as sent or received) holds any spelling of the key: a quick test that lets a
        clean body through without walking it; JSON escapes are matched too, so a body's text is enough."""
        pattern = self._pattern()
        # A JSON string inside a JSON string escapes its escapes (\\u0073): runs of backslashes are folded to
        # one, so a spelling nested at any depth is still seen.
        return pattern is not None and pattern.search(_BACKSLASHES.sub(r"\\", text)) is not None

    def value(self, value: Any) -> Any:
        """A JSON-like value with its strings scrubbed; numbers, booleans and nulls are left alone.

        An object key changes only when it holds the secret itself (an endpoint echoing the key as a
        field name): a real field name such as ``prompt_tokens`` can never match a 12-character secret.
        """
        if not self.active:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def truncated(self, value: str, limit: int) -> str:
        """``value`` cut to ``limit`` characters after scrubbing, so a key split at the cut leaves no prefix."""
        return self.text(self.text(value)[:limit])


_PATTERNS: dict[str, re.Pattern[str]] = {}
_BACKSLASHES = re.compile(r"\\+")
