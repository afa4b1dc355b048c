"""The key never leaves the process, in any encoding an endpoint could echo it in, and a placeholder is never scrubbed.

A hostile endpoint echoes the key raw, ``\\uXXXX``-escaped (inside the answer's JSON and as raw body
bytes), URL-encoded, base64-encoded, as a JSON field name, in a 401, in reasoning text, and cut at
the truncation boundaries bench itself applies; then split over line breaks, over content parts and
over the chunks of a chunked body, in hex (either case) and ``\\x`` escapes, and wrapped base64. Every
written file, stdout and stderr are searched for the key and for every piece of it of 8 characters.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from urllib.parse import quote, unquote

import pytest

from harness.models.scrub import REDACTED, Scrubber, is_placeholder
from tests.helpers.bench import bench_process as bench
from tests.helpers.hostile_server import HostileServer, completion_bytes
from tests.helpers.key_leaks import leaks, leaks_in_folder

KEY = "sk-SECRET-9f8e7d6c5b4a3210"
PREFIX = KEY[:8]
STEP = '{"step": {"action": "finish", "args": {}}}'


def key_of(headers: dict[str, str]) -> str:
    return headers.get("Authorization", "")[len("Bearer ") :]


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


def body_with(extra: dict, content: str = STEP, reasoning: str | None = None) -> bytes:
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return json.dumps(
        {
            "choices": [{"message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37},
            **extra,
        }
    ).encode()


ECHOES = [
    lambda h, b: completion_bytes('{"step": {"action": "finish", "args": {"note": "' + key_of(h) + '"}}}'),
    lambda h, b: completion_bytes('{"step": {"action": "finish", "args": {}}, "note": "' + escaped(key_of(h)) + '"}'),
    lambda h, b: (
        b'{"choices": [{"message": {"content": "' + escaped(STEP + key_of(h)).encode() + b'"}}], '
        b'"usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37}}'
    ),
    lambda h, b: body_with({"link": "https://x.test/?key=" + quote(key_of(h), safe="")}),
    lambda h, b: body_with(
        {
            "auth": base64.b64encode(f"Bearer {key_of(h)}".encode()).decode(),
            "auth_urlsafe": base64.urlsafe_b64encode(f"x:{key_of(h)}".encode()).decode(),
        }
    ),
    lambda h, b: body_with({"echo": {key_of(h): 1}}),
    lambda h, b: body_with({}, reasoning=f"the key is {key_of(h)}", content=""),
    lambda h, b: ("x" * 1990 + key_of(h) + " not json").encode(),  # cut where the raw excerpt ends (2,000 chars)
    lambda h, b: completion_bytes("y" * 490 + key_of(h)),  # cut where the trace keeps 500 characters of text
    lambda h, b: completion_bytes('{"step": {"action": "finish", "args": {"' + key_of(h) + '": true}}}'),
]


def every_form_absent(text: str) -> None:
    for form in (text, unquote(text)):
        assert KEY not in form and PREFIX not in form


@pytest.mark.slow
def test_an_endpoint_echoing_the_key_in_every_encoding_leaks_nothing(tmp_path):
    out = tmp_path / "run"
    with HostileServer(ECHOES) as server:
        result = bench(
            "run",
            "--live",
            "--mode",
            "all",
            "--scenario",
            "blog_brief_approval",
            "--trials",
            "2",
            "--out",
            str(out),
            "--retries",
            "0",
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": KEY},
        )
        assert server.served >= len(ECHOES)
    assert result.returncode == 0, result.stderr
    every_form_absent(result.stdout)
    every_form_absent(result.stderr)
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"traces.jsonl", "recording.jsonl", "manifest.json"}
    for path in files:
        raw = path.read_bytes()
        assert KEY.encode() not in raw and PREFIX.encode() not in raw, path.name
        text = raw.decode("utf-8")
        every_form_absent(text)
        documents = text.splitlines() if path.suffix == ".jsonl" else [text] if path.suffix == ".json" else []
        for document in documents:  # decoded, so no escaped spelling hides the key
            if document.strip():
                every_form_absent(json.dumps(json.loads(document), ensure_ascii=False))
        assert base64.b64encode(KEY.encode())[:12].decode() not in text
    assert REDACTED in (out / "recording.jsonl").read_text()
    assert json.loads((out / "manifest.json").read_text())["live"]["api_key"] == {
        "given": True,
        "placeholder": False,
        "scrubbed": True,
    }


def test_a_401_echoing_the_key_is_scrubbed_from_the_error(tmp_path):
    out = tmp_path / "run"
    with HostileServer(
        [lambda h, b: json.dumps({"error": {"message": f"bad key {key_of(h)}"}}).encode()], status=401
    ) as server:
        result = bench(
            "run",
            "--live",
            "--mode",
            "react",
            "--scenario",
            "blog_brief_approval",
            "--out",
            str(out),
            "--retries",
            "0",
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": KEY},
        )
    assert result.returncode == 3, result.stderr  # the one run ended in an infrastructure error (http_4xx)
    assert PREFIX not in result.stderr + result.stdout
    trace = (out / "traces.jsonl").read_text()
    assert "http_4xx" in trace and REDACTED in trace
    for path in out.rglob("*"):
        if path.is_file():
            assert PREFIX.encode() not in path.read_bytes()


@pytest.mark.parametrize("key", ["EMPTY", "none", "ollama", "sk-no-key-required", "local", "k", "short-key"])
def test_placeholders_and_short_keys_are_not_scrubbed(key):
    assert is_placeholder(key) and Scrubber(key).text(f"none of {key} tokens") == f"none of {key} tokens"


def test_scrubbing_leaves_keys_and_numbers_alone():
    scrubber = Scrubber(KEY)
    body = {"usage": {"prompt_tokens": 5}, "text": f"a {KEY} b", "list": [KEY[:12], 3]}
    assert scrubber.value(body) == {"usage": {"prompt_tokens": 5}, "text": f"a {REDACTED} b", "list": [REDACTED, 3]}


@pytest.mark.slow
@pytest.mark.parametrize("key", ["sk-abc\ndefghijklmnop", "sk-abcdefghijkl\u00e9mnop", "sk-abc defghijklmnop"])
def test_a_key_no_header_can_carry_is_one_line_without_the_key(tmp_path, key):
    result = bench(
        "run",
        "--live",
        "--out",
        str(tmp_path / "run"),
        env={"LLM_API_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m", "LLM_API_KEY": key},
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert "LLM_API_KEY" in line and "abcdefgh" not in line and "defghijk" not in line


def test_the_quick_check_sees_the_key_escaped_at_any_depth_and_passes_clean_text():
    """A clean body skips the walk; a spelling nested in escaped JSON, two or three levels deep, never does."""
    from harness.models.scrub import Scrubber

    scrubber = Scrubber(KEY)
    once = json.dumps({"content": escaped(KEY)})  # \\u0073... inside a JSON string
    twice = json.dumps({"outer": json.dumps({"content": escaped(KEY)})})
    thrice = json.dumps({"a": json.dumps({"b": json.dumps({"c": KEY})})})
    for text in (once, twice, thrice, KEY[:9] + "...", base64.b64encode(KEY.encode()).decode()):
        assert scrubber.mentions(text), text
    assert not scrubber.mentions(json.dumps({"usage": {"prompt_tokens": 30}, "content": "sk-other-key-value"}))


# ---------------------------------------------------------------- split over lines and chunks, hex: no piece of 8

SPLIT_KEY = "sk-LEAK-4f9c2e7a1b8d6053xyz"  # 27 characters, as in the issue


def finish_with(note: str) -> str:
    """A next action that ends the run and carries ``note`` into the trace."""
    return json.dumps({"step": {"action": "finish", "args": {"note": note}}})


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunked(make: Callable[[str], bytes]) -> Callable[[dict[str, str], dict], tuple[None, Callable[[], list[bytes]]]]:
    return lambda h, b: (None, lambda: pieces(make(key_of(h)).decode(), 5))  # type: ignore[return-value]


SPLIT_ECHOES: list = [
    # the case: 13 characters, a line break, the other 14
    lambda h, b: completion_bytes(finish_with(f"{key_of(h)[:13]}\n{key_of(h)[13:]}")),
    # many short lines, none 8 long on its own; and a CRLF in the reasoning
    lambda h, b: completion_bytes(finish_with("\n".join(pieces(key_of(h), 3)))),
    lambda h, b: body_with({}, reasoning=f"thinking: {key_of(h)[:6]}\r\n{key_of(h)[6:]}", content=""),
    # split across content parts the reader joins (3 characters a part), as strings and as text objects
    lambda h, b: completion_bytes([{"type": "text", "text": p} for p in pieces(finish_with(key_of(h)), 3)]),
    lambda h, b: completion_bytes(pieces(finish_with(key_of(h)), 4)),
    # hex, lower and upper case, whole and split over a line
    lambda h, b: body_with({"trace": key_of(h).encode().hex()}),
    lambda h, b: completion_bytes(finish_with(key_of(h).encode().hex().upper())),
    lambda h, b: completion_bytes(finish_with(key_of(h).encode().hex()[:20] + "\n" + key_of(h).encode().hex()[20:])),
    # \x escapes, and base64 wrapped at 76 characters (MIME)
    lambda h, b: completion_bytes(finish_with("".join(f"\\x{c:02x}" for c in key_of(h).encode()))),
    lambda h, b: body_with({"auth": base64.encodebytes(f"Authorization: Bearer {key_of(h)} ".encode() * 3).decode()}),
    # an unreadable body cut where its excerpt ends, the key split over a line at the cut
    lambda h, b: ("x" * 1985 + key_of(h)[:9] + "\n" + key_of(h)[9:] + " not json").encode(),
]


@pytest.mark.slow
def test_an_endpoint_echoing_the_key_split_and_in_hex_leaves_no_piece_of_8_anywhere(tmp_path):
    """Acceptance (issue 21, item 4): a live matrix and bench probe against the hostile endpoint; then every file
    under the run folder, and every stream, is searched for every 8-character piece of the key in every spelling."""
    out = tmp_path / "run"
    env = {"LLM_API_URL": "", "LLM_MODEL": "m", "LLM_API_KEY": SPLIT_KEY}
    answers = [*SPLIT_ECHOES, chunked(lambda k: completion_bytes(finish_with(k)))]
    with HostileServer(answers) as server:
        env["LLM_API_URL"] = server.base_url
        args = ("--mode", "all", "--scenario", "blog_brief_approval", "--trials", "2", "--retries", "0")
        result = bench("run", "--live", *args, "--out", str(out), env=env)
        probe = bench("probe", env=env)
        assert server.served >= 2 * len(answers)
    assert result.returncode == 0, result.stderr
    assert probe.returncode == 0 and "capability" in probe.stdout, probe.stderr
    streams = {"run stdout": result.stdout, "run stderr": result.stderr, "probe stdout": probe.stdout}
    streams["probe stderr"] = probe.stderr
    assert {name: leaks(text, SPLIT_KEY) for name, text in streams.items()} == {name: [] for name in streams}
    assert {p.name for p in out.rglob("*") if p.is_file()} >= {"traces.jsonl", "recording.jsonl", "manifest.json"}
    assert leaks_in_folder(out, SPLIT_KEY) == {}
    recording = (out / "recording.jsonl").read_text()
    assert REDACTED in recording and "4f9c2e7a" not in recording


@pytest.mark.slow
def test_an_error_body_echoing_the_key_split_and_in_hex_leaves_no_piece_of_8(tmp_path):
    out = tmp_path / "run"

    def echo(h: dict[str, str], b: dict) -> bytes:
        key = key_of(h)
        message = f"bad key {key[:12]}\n{key[12:]} ({key.encode().hex().upper()})"
        return json.dumps({"error": {"message": message}}).encode()

    with HostileServer([echo], status=401) as server:
        env = {"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": SPLIT_KEY}
        result = bench(
            "run", "--live", "--mode", "react", "--scenario", "blog_brief_approval", "--out", str(out), env=env
        )
    assert result.returncode == 3, result.stderr
    assert leaks(result.stdout + result.stderr, SPLIT_KEY) == [] and leaks_in_folder(out, SPLIT_KEY) == {}
    assert "http_4xx" in (out / "traces.jsonl").read_text()


# ---------------------------------------------------------------- spellings only a normalised comparison sees

FOLD_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90KlMn"


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else c for c in text)


FOLDED_ECHOES = {  # the seven spellings of the attack run that a normalised comparison catches (ROT13: docs)
    "reversed": lambda k: k[::-1],
    "upper-case": str.upper,
    "spaced": lambda k: " ".join(k),
    "dashed": lambda k: "-".join(k),
    "zero-width": lambda k: "\u200b".join(k),
    "HTML entities": lambda k: "".join(f"&#{ord(c)};" for c in k),
    "fullwidth": fullwidth,
}


@pytest.mark.slow
def test_an_endpoint_echoing_the_key_reversed_upper_spaced_dashed_zero_width_as_entities_or_fullwidth_leaks_nothing(
    tmp_path,
):
    from tests.helpers.key_leaks import folded_leaks

    out = tmp_path / "run"

    def echo(spell: Callable[[str], str]) -> Callable[[dict[str, str], dict], bytes]:
        return lambda h, b: completion_bytes(finish_with(f"your key: {spell(key_of(h))}"))

    answers = [echo(spell) for spell in FOLDED_ECHOES.values()]
    answers.append(lambda h, b: json.dumps({"error": {"message": f"bad key {key_of(h).upper()[::-1]}"}}).encode())
    with HostileServer(answers) as server:
        result = bench(
            "run", "--live", "--mode", "react", "--scenario", "blog_brief_approval", "--trials", str(len(answers)),
            "--retries", "0", "--out", str(out),
            env={"LLM_API_URL": server.base_url, "LLM_MODEL": "m", "LLM_API_KEY": FOLD_KEY},
        )  # fmt: skip
        assert server.served >= len(answers)
    assert "Traceback" not in result.stderr
    assert folded_leaks(result.stdout + result.stderr, FOLD_KEY) == []
    for path in (p for p in out.rglob("*") if p.is_file()):
        assert folded_leaks(path.read_bytes().decode("utf-8", errors="replace"), FOLD_KEY) == [], path.name
    assert (out / "traces.jsonl").read_text().count(REDACTED) >= len(FOLDED_ECHOES)
