"""Keeps the API key out of everything bench writes or prints, in every form an endpoint could echo it in.

Every piece of the key of ``FRAGMENT_LENGTH`` (8) characters or more is removed, wherever it starts: the
whole key, a prefix cut by a truncation, the part after a line break. Each piece is found spelled as plain
text; JSON-escaped (``\\u0073`` or ``\\"`` per character, any number of backslashes, mixed freely, as raw
body text or inside a decoded string); URL-encoded (``%73``) or ``\\x73``-escaped; hex (lower or upper
case); and base64 (standard and URL-safe, at any alignment inside a longer base64 text). Line breaks (raw,
``\\n``-escaped, ``%0A``) inside a spelling are looked through, so a key wrapped or split over two lines is
one piece; so are the boundaries between the text parts of a list (a message's content parts), which a
reader joins. Only strings are scrubbed: numbers are never altered, so usage counts survive (an object key
changes only if it holds a piece of the secret itself). A key that is too short or too common to be a
secret (``EMPTY``, ``none``, ``ollama``, ``sk-no-key-required``, anything under 12 characters) is sent but
never scrubbed: doing so would corrupt model text and token counts while protecting nothing.

The same pieces are also looked for in a normalised form (``_fold``), forwards and reversed: the text's
escapes decoded as above and its HTML entities (``&#115;``, ``&#x73;``, ``&amp;``) too, NFKC-normalised
(fullwidth ``ｓｋ`` is ``sk``), case-folded, and with separators taken out (white space, zero-width and other
format characters, dashes, ``_ . , : ; / | \\`` and quotes), so ``S K - P R O J``, ``s\u200bk``, ``SK_PROJ``
and the key written backwards are the key. A key whose normalised form is under 8 characters is looked for as
written only. Since separators are looked through, a neighbouring character that continues the key across
one (``...c5 b`` for a key with ``c5b``) is redacted with it. Not caught, by design: a key enciphered (ROT13,
XOR, any substitution) or hashed, or pieces of it under 8 characters scattered through a text: no scrub can
tell those from other text without the cipher, and trying would redact ordinary words (docs/live-models.md).
"""

from __future__ import annotations

import base64
import html
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 12
FRAGMENT_LENGTH = 8  # a piece of the key this long or longer is treated as the key itself
GRAM = FRAGMENT_LENGTH // 2  # every piece of FRAGMENT_LENGTH holds a key piece of GRAM at a stride of GRAM
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
LINE_BREAKS = b"\r\n"
_HEX_RUN = re.compile(rf"[0-9a-fA-F]{{{2 * FRAGMENT_LENGTH},}}")
_BASE64_RUN = re.compile(rf"[A-Za-z0-9+/_-]{{{(FRAGMENT_LENGTH * 4 + 2) // 3},}}")  # 11 characters carry 8 bytes
_URLSAFE = str.maketrans("-_", "+/")
_TO_URLSAFE = str.maketrans("+/", "-_")
_PERCENT = re.compile(r"%(?:2[1-9a-fA-F]|[3-7][0-9a-fA-F]|0[aAdD])")  # a printable character or a line break

# Taken out of a text before the normalised comparison: what an echo puts between the key's characters.
SEPARATORS = " \t\r\n\v\f-_.,:;/|\\'\"`\u00a0\u00ad\u034f\u180e\u2028\u2029\u202f\u205f\u3000\ufeff\u2212" + "".join(
    map(chr, [*range(0x2000, 0x2010), *range(0x2010, 0x2016), *range(0x2060, 0x2065)])
)
_DROP = {ord(c): None for c in SEPARATORS}
_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")

Span = tuple[int, int]


def _fold(text: str) -> str:
    """A text as the normalised comparison reads it: NFKC, case-folded, separators out (entities decoded first)."""
    if "&" in text:
        text = html.unescape(text)
    return unicodedata.normalize("NFKC", text).casefold().translate(_DROP)


def is_placeholder(key: str) -> bool:
    """True when ``key`` is too short or too common to be a secret worth scrubbing."""
    return len(key) < MIN_SECRET_LENGTH or key.strip().lower() in PLACEHOLDERS


KEY_PREFIXES = ("sk-", "sk_", "gsk_", "hf_", "xai-", "aiza", "ghp_", "github_pat_", "r8_", "pplx-", "nvapi-", "csk-")
_KEY_CHARACTERS = re.compile(r"[A-Za-z0-9_\-.+/=~]+")


def looks_like_key(value: str) -> bool:
    """Whether a configuration value (a name bench expected) looks like an API key, and so must not be echoed: a
    known key prefix, or 20 or more key characters mixing digits with lower-case letters (an environment
    variable's name is upper-case by custom, and a word has no digits)."""
    value = value.strip()
    if len(value) < 16 or not _KEY_CHARACTERS.fullmatch(value):
        return False
    if value.lower().startswith(KEY_PREFIXES):
        return True
    return len(value) >= 20 and any(c.isdigit() for c in value) and any(c.islower() for c in value)


def _pieces_of(value: Any, length: int) -> frozenset[Any]:
    return frozenset(value[i : i + length] for i in range(len(value) - length + 1))


def _base64_cores(key: bytes) -> list[str]:
    """The key's base64 form that does not depend on what surrounds it, at each of the three alignments."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + key + b"\0\0").decode("ascii")
        # Character i carries bits 6i..6i+5 of the byte stream; keep those made of key bytes only.
        keep = [i for i in range(len(encoded)) if (6 * i) // 8 >= offset and (6 * i + 5) // 8 < offset + len(key)]
        if keep:
            cores.append(encoded[keep[0] : keep[-1] + 1])
    return cores


def _covered(data: Any, windows: frozenset[Any], grams: frozenset[Any]) -> list[Span]:
    """The spans of ``data`` (a str or bytes) made of windows of the key; merged where they overlap or touch."""
    size = len(data)
    if size < FRAGMENT_LENGTH:
        return []
    # Every window of FRAGMENT_LENGTH holds a gram that starts at a multiple of GRAM, at most GRAM after the
    # window's start: only the starts just before such a gram are tried, so a long clean text costs one pass.
    hits = [i for i in range(0, size - GRAM + 1, GRAM) if data[i : i + GRAM] in grams]
    starts = sorted({s for i in hits for s in range(max(0, i - GRAM), min(i, size - FRAGMENT_LENGTH) + 1)})
    spans: list[Span] = []
    for i in starts:
        if data[i : i + FRAGMENT_LENGTH] in windows:
            if spans and spans[-1][1] >= i:
                spans[-1] = (spans[-1][0], i + FRAGMENT_LENGTH)
            else:
                spans.append((i, i + FRAGMENT_LENGTH))
    return spans


class _View:
    """A text with every per-character escape decoded and every line break taken out, and the way back.

    ``special`` matches what is decoded: ``\\uXXXX`` and ``\\xXX`` (any number of backslashes), runs of
    ``%XX``, short JSON escapes, raw and escaped line breaks (decoded to nothing, so a key split over
    two lines reads as one), and ``+`` when the key has a space (form encoding).
    """

    def __init__(self, text: str, special: re.Pattern[str], plus: str):
        self.text = text
        # One row per decoded stretch: where its output starts and ends in the view, and its span in the text.
        self._starts: list[int] = []
        self._rows: list[tuple[int, int, int]] = []
        parts: list[str] = []
        at = 0
        size = 0
        for match in special.finditer(text):
            parts.append(text[at : match.start()])
            size += match.start() - at
            at = match.end()
            for decoded, begin, end in _decode(match, plus):
                self._starts.append(size)
                self._rows.append((size + len(decoded), begin, end))
                parts.append(decoded)
                size += len(decoded)
        if self._rows:
            parts.append(text[at:])
            self.text = "".join(parts)

    def _where(self, index: int) -> Span:
        """The span of the text that view character ``index`` comes from."""
        row = bisect_right(self._starts, index) - 1
        if row < 0:
            return index, index + 1
        view_end, begin, end = self._rows[row]
        if index < view_end:
            return begin, end
        return end + index - view_end, end + index - view_end + 1

    def source(self, span: Span) -> Span:
        """The span of the text a span of the view comes from (line breaks inside it included)."""
        if not self._rows:
            return span
        return self._where(span[0])[0], self._where(span[1] - 1)[1]


def _decode(match: re.Match[str], plus: str) -> list[tuple[str, int, int]]:
    """What one escape, run of ``%XX``, line break or ``+`` stands for: (characters, start, end) in the text."""
    token, start = match.group(), match.start()
    if token[0] == "%":
        octets = bytes.fromhex(token.replace("%", ""))
        if octets.isascii():  # one character per %XX, each mapped back to its own three characters
            return [(_unbreak(chr(b)), start + 3 * i, start + 3 * i + 3) for i, b in enumerate(octets)]
        return [(_unbreak(octets.decode("utf-8", "replace")), start, match.end())]
    if token == "+":
        return [(plus, start, match.end())]
    if token in "\r\n":
        return [("", start, match.end())]
    escaped = token.lstrip("\\") or "\\"  # a short escape of the backslash itself
    if escaped[0] in "ux":
        decoded = _unbreak(chr(int(escaped[1:], 16)))
    else:
        decoded = "" if escaped in "rn" else escaped
    return [(decoded, start, match.end())]


def _unbreak(text: str) -> str:
    return text.replace("\r", "").replace("\n", "")


def _base64_needles(key: bytes) -> frozenset[str]:
    """Every other whole base64 group of the key, at each alignment: a piece of 8 bytes holds two consecutive
    whole groups (at the alignment it sits at), so one of them is a needle."""
    needles = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + key).decode("ascii")
        for group in range(0, len(encoded) // 4, 2):
            if 3 * group >= offset and 3 * group + 3 <= offset + len(key):
                quad = encoded[4 * group : 4 * group + 4]
                needles |= {quad, quad.translate(_TO_URLSAFE)}
    return frozenset(needles)


class _KeyForms:
    """What finding one key needs, built once per key: its windows, grams and the regexes of its runs."""

    def __init__(self, key: str):
        self.key = key
        encoded = key.encode("utf-8")
        self.windows = _pieces_of(key, FRAGMENT_LENGTH)
        self.grams = _pieces_of(key, GRAM)
        self.byte_windows = _pieces_of(encoded, FRAGMENT_LENGTH)
        self.byte_grams = _pieces_of(encoded, GRAM)
        self.hex_grams = _pieces_of(encoded.hex(), 2 * GRAM)
        self.base64_grams = frozenset().union(*(_pieces_of(core, GRAM) for core in _base64_cores(encoded)))
        self.runs = re.compile("[" + "".join(re.escape(c) for c in sorted(set(key))) + f"]{{{FRAGMENT_LENGTH},}}")
        short = "".join(re.escape(c) for c in '"\\/' if c == "/" or c in key)  # '/' for base64 in escaped JSON
        space = " " in key and "+" not in key
        # The lookahead lets the regex engine skip to the next candidate character instead of trying each branch.
        self.special = re.compile(
            r"(?=[\\%\r\n+])(?:\\+u[0-9a-fA-F]{4}|\\+x[0-9a-fA-F]{2}|(?:%[0-9a-fA-F]{2})+|\\+[rn]|\r|\n|\\+["
            + short
            + "]"
            + (r"|\+" if space else "")
            + ")"
        )
        # The quick test's needles: every piece of 8 holds one of these in each spelling. Plain: 4 characters
        # every 5 (8 = 4 + 5 - 1); hex: 8 digits every 10 (a piece starts at an even digit: 16 = 8 + 10 - 2);
        # base64: every other whole group (4 characters) at each alignment (a piece holds two whole groups).
        hexed = encoded.hex()
        self.needles = frozenset(key[i : i + GRAM] for i in range(0, len(key) - GRAM + 1, GRAM + 1)) | _base64_needles(
            encoded
        )
        self.hex_needles = frozenset(hexed[i : i + 2 * GRAM] for i in range(0, len(hexed) - 2 * GRAM + 1, 10))
        # A key with a backslash or a space is spelled in ways the quick test does not model: always looked for.
        self.always = "\\" in key or " " in key
        # The normalised comparison: the key folded, forwards and backwards (None when too short to be a piece).
        folded = _fold(key)
        both = [folded, folded[::-1]] if len(folded) >= FRAGMENT_LENGTH else []
        self.folded_windows = frozenset().union(*(_pieces_of(k, FRAGMENT_LENGTH) for k in both))
        self.folded_grams = frozenset().union(*(_pieces_of(k, GRAM) for k in both))
        self.folded_needles = frozenset(k[i : i + GRAM] for k in both for i in range(0, len(k) - GRAM + 1, GRAM + 1))

    def may_hold(self, text: str) -> bool:
        """A quick test with substring searches only: False when ``text`` cannot spell a piece of the key.

        Line breaks and backslashes are taken out first, so a key split over lines, or with its ``/`` escaped,
        still shows a needle; a text with ``\\u``, ``\\x`` or a ``%XX`` of a printable character always goes on
        to the full search. Not modelled (and so found only when another piece of the key shows a needle): a key
        split into pieces of under 7 bytes by line breaks and then hex- or base64-encoded.
        """
        if self.always or "\\u" in text or "\\x" in text or ("%" in text and _PERCENT.search(text)):
            return True
        plain = text.replace("\r", "").replace("\n", "")
        if "\\" in plain:  # escaped line breaks (at any depth), then what is left of other escapes
            plain = plain.replace("\\r", "").replace("\\n", "").replace("\\", "")
        if any(needle in plain for needle in self.needles):
            return True
        lower = plain.lower()
        return any(needle in lower for needle in self.hex_needles)

    def may_hold_folded(self, text: str) -> bool:
        """The quick test of the normalised comparison: False when the folded text shows none of its needles (a text
        with escapes is always looked at: its view decodes them first)."""
        if not self.folded_needles:
            return False
        if "\\u" in text or "\\x" in text or ("%" in text and _PERCENT.search(text)):
            return True
        folded = _fold(text)
        return any(needle in folded for needle in self.folded_needles)

    def spans(self, text: str, first: bool = False) -> list[Span]:
        """Where ``text`` spells a piece of the key, in any spelling; in the text's own positions."""
        plain, folded = self.may_hold(text), self.may_hold_folded(text)
        if not (plain or folded):
            return []
        view = _View(text, self.special, " ")
        found: list[Span] = []
        finders = [self._in_characters, self._in_hex, self._in_base64] if plain else []
        for finder in [*finders, *([self._in_folded] if folded else [])]:
            found.extend(view.source(span) for span in finder(view.text))
            if first and found:
                break
        return found

    def _in_characters(self, text: str) -> list[Span]:
        found: list[Span] = []
        for run in self.runs.finditer(text):
            start = run.start()
            found.extend((start + a, start + b) for a, b in _covered(run.group(), self.windows, self.grams))
        return found

    def _in_folded(self, text: str) -> list[Span]:
        """Windows of the folded key, forwards or backwards, in the folded text; each mapped back to the characters
        (or entity) it was folded from."""
        folded = _fold(text)
        if not any(needle in folded for needle in self.folded_needles):
            return []
        chars: list[str] = []
        origin: list[Span] = []
        at = 0
        for match in [*_ENTITY.finditer(text), None]:
            end = match.start() if match is not None else len(text)
            for i in range(at, end):
                for c in _fold(text[i]):
                    chars.append(c)
                    origin.append((i, i + 1))
            if match is not None:
                for c in _fold(html.unescape(match.group())):
                    chars.append(c)
                    origin.append(match.span())
                at = match.end()
        spans = _covered("".join(chars), self.folded_windows, self.folded_grams)
        return [(origin[a][0], origin[b - 1][1]) for a, b in spans]

    def _bytes(self, data: bytes) -> list[Span]:
        """Windows of the key in decoded bytes, with line breaks inside them looked through."""
        if LINE_BREAKS[:1] in data or LINE_BREAKS[1:] in data:
            kept = [i for i, b in enumerate(data) if b not in LINE_BREAKS]
            inner = _covered(bytes(data[i] for i in kept), self.byte_windows, self.byte_grams)
            return [(kept[a], kept[b - 1] + 1) for a, b in inner]
        return _covered(data, self.byte_windows, self.byte_grams)

    def _near_grams(self, run: str, grams: frozenset[str], step: int, reach: int) -> list[Span]:
        """The stretches of ``run`` within ``reach`` of a gram found at a stride of ``step``: a spelled piece of the
        key holds such a gram and is never longer than ``reach``, so only these stretches need decoding."""
        stretches: list[Span] = []
        for i in range(0, len(run) - step + 1, step):
            if run[i : i + step] in grams:
                start, end = max(0, i - reach), min(len(run), i + step + reach)
                if stretches and start <= stretches[-1][1]:
                    stretches[-1] = (stretches[-1][0], end)
                else:
                    stretches.append((start, end))
        return stretches

    def _in_hex(self, text: str) -> list[Span]:
        found: list[Span] = []
        reach = 4 * len(self.key.encode("utf-8"))  # twice the key's hex: room for line breaks inside it
        for run in _HEX_RUN.finditer(text):
            digits = run.group().lower()
            for begin, end in self._near_grams(digits, self.hex_grams, 2 * GRAM, reach):
                start = run.start() + begin
                for phase in (0, 1):
                    usable = (end - begin - phase) // 2 * 2
                    for a, b in self._bytes(bytes.fromhex(digits[begin + phase : begin + phase + usable])):
                        found.append((start + phase + 2 * a, start + phase + 2 * b))
        return found

    def _in_base64(self, text: str) -> list[Span]:
        found: list[Span] = []
        reach = 3 * len(self.key.encode("utf-8"))  # twice the key's base64: room for line breaks inside it
        for run in _BASE64_RUN.finditer(text):
            every = run.group().translate(_URLSAFE)
            for begin, end in self._near_grams(every, self.base64_grams, GRAM, reach):
                chars, start = every[begin:end], run.start() + begin
                for lead in range(4):  # the stretch may start at any of the four characters of a base64 group
                    padded = "A" * lead + chars
                    padded += "A" * (-len(padded) % 4)
                    for a, b in self._bytes(base64.b64decode(padded)):
                        # Byte m is made of characters (8m)//6 .. (8m+7)//6 of the padded text.
                        first = max(0, (8 * a) // 6 - lead)
                        last = min(len(chars) - 1, (8 * (b - 1) + 7) // 6 - lead)
                        if first <= last:
                            found.append((start + first, start + last + 1))
        return found


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

    def _forms(self) -> _KeyForms | None:
        if not self.active:
            return None
        forms = _FORMS.get(self.key)
        if forms is None:
            forms = _FORMS[self.key] = _KeyForms(self.key)
        return forms

    def text(self, value: str) -> str:
        """``value`` with every spelling of every piece of the key of 8 characters or more replaced."""
        forms = self._forms()
        if forms is None or len(value) < FRAGMENT_LENGTH:
            return value
        return _replace(value, forms.spans(value))

    def mentions(self, text: str) -> bool:
        """Whether ``text`` (a body as sent or received) holds any spelling of a piece of the key: a quick test that
        lets a clean body through without walking it; escapes at any depth are matched, so a body's text is enough."""
        forms = self._forms()
        return forms is not None and bool(forms.spans(text, first=True))

    def answer(self, text: str, parsed: Any) -> Any:
        """A body parsed from ``text``, scrubbed; walked only when its text mentions the key or it has text split over
        the parts of a list (whose pieces the text alone cannot show)."""
        if not self.active or not (self.mentions(text) or _has_parts(parsed)):
            return parsed
        return self.value(parsed)

    def value(self, value: Any) -> Any:
        """A JSON-like value with its strings scrubbed; numbers, booleans and nulls are left alone.

        An object key changes only when it holds a piece of the secret (an endpoint echoing the key as a
        field name): a real field name such as ``prompt_tokens`` can never match a 12-character secret.
        Text split over consecutive parts of a list (strings, or objects with a ``text``) is matched as
        the reader joins it.
        """
        if not self.active:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return self._parts([self.value(v) for v in value], value)
        return value

    def _parts(self, scrubbed: list[Any], original: list[Any]) -> list[Any]:
        """``scrubbed`` with the pieces of the key that span consecutive text parts of ``original`` removed too."""
        forms = self._forms()
        assert forms is not None
        group: list[tuple[int, str]] = []
        for index, item in enumerate([*original, None]):
            text = item if isinstance(item, str) else item.get("text") if isinstance(item, dict) else None
            if isinstance(text, str):
                group.append((index, text))
                continue
            if len(group) > 1:
                joined = "".join(part for _, part in group)
                spans = forms.spans(joined)
                offset = 0
                for at, part in group:
                    inside = [
                        (max(a, offset) - offset, min(b, offset + len(part)) - offset)
                        for a, b in spans
                        if a < offset + len(part) and b > offset
                    ]
                    offset += len(part)
                    if inside:
                        cleaned = self.text(_replace(part, inside))
                        kept = scrubbed[at]
                        scrubbed[at] = cleaned if isinstance(kept, str) else {**kept, "text": cleaned}
            group = []
        return scrubbed

    def truncated(self, value: str, limit: int) -> str:
        """``value`` cut to ``limit`` characters, scrubbed: a piece of the key cut at the end is removed when it is 8
        characters or more, and what a cut leaves shorter than that is no piece at all."""
        return self.text(value[:limit])[:limit]


def _text_part(item: Any) -> bool:
    return isinstance(item, str) or (isinstance(item, dict) and isinstance(item.get("text"), str))


def _has_parts(value: Any) -> bool:
    """Whether a JSON-like value holds a list with two text parts in a row (strings, or objects with a ``text``)."""
    if isinstance(value, dict):
        return any(_has_parts(v) for v in value.values())
    if isinstance(value, list):
        return any(_text_part(a) and _text_part(b) for a, b in pairwise(value)) or any(_has_parts(v) for v in value)
    return False


def _replace(text: str, spans: list[Span]) -> str:
    """``text`` with each span (merged where they overlap or touch) replaced by REDACTED."""
    if not spans:
        return text
    out, at = [], 0
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    for a, b in merged:
        out.append(text[at:a])
        out.append(REDACTED)
        at = b
    out.append(text[at:])
    return "".join(out)


_FORMS: dict[str, _KeyForms] = {}
