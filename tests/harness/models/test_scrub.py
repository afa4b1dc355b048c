"""The key scrub in every place of a response a key can appear (strings nested in lists and objects, an object's
own key, ``choices[0].message.content``, text split over content parts) and in every spelling, through the
scrubber and through the live client: every piece of 8 characters or more, across line breaks, in hex."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from urllib.parse import quote

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.model_port import ModelRequest, PolicyView, RequestMeta
from harness.models.live import LiveConfig, LiveSource
from harness.models.scrub import REDACTED, Scrubber, is_placeholder
from tests.helpers.key_leaks import leaks

KEY = "sk-live-Zq7/Xy+9w3Kp"  # has characters JSON, URLs and base64 each spell their own way
SCRUB = Scrubber(KEY)


def test_a_key_inside_a_list_inside_an_object_is_scrubbed():
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"my key is {KEY}, ok"}}]}
    scrubbed = SCRUB.value(body)
    assert scrubbed == {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": f"my key is {REDACTED}, ok"}}]
    }


def test_a_key_in_a_list_of_lists_and_as_an_object_key_is_scrubbed_and_structure_survives():
    body = {"a": [[KEY, 1, 2.5, True, None]], KEY: {"n": 7}, "usage": {"prompt_tokens": 123456789012}}
    scrubbed = SCRUB.value(body)
    assert scrubbed == {
        "a": [[REDACTED, 1, 2.5, True, None]],
        REDACTED: {"n": 7},
        "usage": {"prompt_tokens": 123456789012},
    }


def test_values_that_are_not_strings_lists_or_objects_come_back_as_they_are():
    for value in (5, 1.5, None, False, (KEY,)):
        assert SCRUB.value(value) is value


@pytest.mark.parametrize(
    "spelling",
    [
        KEY,
        json.dumps(KEY)[1:-1],  # "\/" is JSON's escape of "/"
        "".join(f"\\u{ord(c):04x}" for c in KEY),
        "".join(f"\\u{ord(c):04X}" for c in KEY),
        quote(KEY, safe=""),
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(KEY, safe="")),
        KEY[:8],  # a prefix cut at a truncation
        KEY[:13],
    ],
)
def test_every_spelling_of_the_key_is_scrubbed_inside_text(spelling):
    text = f"before {spelling} after"
    assert SCRUB.text(text) == f"before {REDACTED} after"


@pytest.mark.parametrize("urlsafe", [False, True])
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_the_key_in_base64_at_any_alignment_inside_a_longer_text_is_scrubbed(offset, urlsafe):
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    encoded = encode(b"x" * offset + KEY.encode() + b" trailing").decode()
    scrubbed = SCRUB.text(encoded)
    # Only the few characters that mix key bits with their neighbours' may stay.
    assert REDACTED in scrubbed and len(scrubbed) - len(REDACTED) <= len(encoded) - (len(KEY) * 4 // 3 - 4)


def test_a_space_in_a_key_is_matched_in_form_encoding():
    spaced = Scrubber("secret value 12345")
    assert spaced.text("k=secret+value+12345") == f"k={REDACTED}"


def test_a_prefix_shorter_than_eight_characters_is_left_alone():
    assert SCRUB.text(KEY[:7]) == KEY[:7]


def test_a_cut_at_the_limit_leaves_no_piece_of_the_key():
    text = "x" * 10 + KEY
    for limit in range(10, 10 + len(KEY) + 5):
        cut = SCRUB.truncated(text, limit)
        assert len(cut) <= limit and KEY[:8] not in cut and KEY not in cut


def test_an_empty_text_comes_back_as_it_is():
    assert SCRUB.text("") == ""


@pytest.mark.parametrize("key", ["EMPTY", "ollama", " None ", "sk-no-key-required", "short-key", "SK-NO-KEY-REQUIRED"])
def test_a_placeholder_or_short_key_is_sent_but_never_scrubbed(key):
    scrubber = Scrubber(key)
    assert is_placeholder(key) and scrubber.placeholder and not scrubber.active
    body = {"choices": [{"message": {"content": f"{key} {key.strip()}"}}]}
    assert scrubber.value(body) == body and scrubber.text(key) == key


def test_no_key_is_neither_active_nor_a_placeholder():
    assert not Scrubber("").active and not Scrubber("").placeholder
    assert Scrubber("").value({"a": "b"}) == {"a": "b"}


def test_a_twelve_character_key_is_a_secret():
    assert not is_placeholder("abcdefghijkl") and is_placeholder("abcdefghijk")
    assert Scrubber("abcdefghijkl").active


def test_the_key_never_shows_in_the_scrubbers_repr():
    assert KEY not in repr(SCRUB)


# ---------------------------------------------------------------- through the live client


def exchange(response: httpx.Response):
    """One request through the live client on a mock transport; the request itself quotes the key."""
    view = PolicyView(catalog=(), history=(), approvals=frozenset(), agent_role="agent", max_plan_steps=2)
    ask = ModelRequest(
        "next_action",
        ({"role": "user", "content": f"echo {KEY}"},),
        {"type": "object"},
        (),
        view,
        RequestMeta("s", "m", 1),
    )

    async def go():
        source = LiveSource(
            LiveConfig(url="http://model.test/v1/chat/completions", model="m", api_key=KEY, retries=0),
            transport=httpx.MockTransport(lambda _: response),
        )
        try:
            return await source.for_run(1).exchange(ask)
        finally:
            await source.aclose()

    return asyncio.run(go())


def test_a_key_echoed_in_choices_message_content_is_scrubbed_from_the_exchange():
    body = {
        "choices": [{"message": {"role": "assistant", "content": f'{{"action": "finish", "note": "{KEY}"}}'}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    got = exchange(httpx.Response(200, json=body))
    assert got.response["choices"][0]["message"]["content"] == f'{{"action": "finish", "note": "{REDACTED}"}}'
    assert got.response["usage"] == body["usage"]
    assert KEY not in got.model_dump_json() and got.request["messages"][0]["content"] == f"echo {REDACTED}"


def test_a_key_echoed_in_an_unreadable_body_is_scrubbed_from_what_is_kept():
    got = exchange(httpx.Response(200, content=f"not json {KEY}".encode()))
    assert got.unreadable is not None and got.raw == f"not json {REDACTED}"


def test_a_key_echoed_in_an_error_body_is_scrubbed_from_the_error():
    got = exchange(httpx.Response(401, json={"error": {"message": f"bad key {KEY}"}}))
    assert got.error is not None and got.error.kind == "http_4xx"
    assert KEY not in got.error.message and REDACTED in got.error.message


# ---------------------------------------------------------------- every piece of 8, split, hex, content parts

LONG_KEY = "sk-SECRET-9f8e7d6c5b4a3210xyz"  # 29 characters, like a real key


def no_piece_left(text: str, key: str = LONG_KEY) -> bool:
    return leaks(text, key) == []


@pytest.mark.parametrize("start", range(len(LONG_KEY) - 7))
def test_every_piece_of_eight_characters_is_scrubbed_wherever_it_starts(start):
    piece = LONG_KEY[start : start + 8]
    scrubbed = Scrubber(LONG_KEY).text(f"a {piece} ?")
    assert scrubbed == f"a {REDACTED} ?"


def test_a_neighbour_that_continues_the_key_across_a_separator_is_taken_with_it():
    """The normalised comparison looks through separators, so "c5 b" reads as the key's "c5b": the "b" goes too."""
    assert Scrubber(LONG_KEY).text("a f8e7d6c5 b") == f"a {REDACTED}"


def test_a_piece_of_seven_characters_from_the_middle_is_left_alone():
    assert Scrubber(LONG_KEY).text(LONG_KEY[9:16]) == LONG_KEY[9:16]


@pytest.mark.parametrize(
    "cut",
    [3, 13, 20],  # a head too short to be a piece on its own, the 13 + 16, a tail of 9
)
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\\n", "\\\\n", "%0A", "\\u000a", "\n   \n"])
def test_a_key_split_over_a_line_break_is_scrubbed_whole(cut, newline):
    text = f"key: {LONG_KEY[:cut]}{newline}{LONG_KEY[cut:]} end"
    scrubbed = Scrubber(LONG_KEY).text(text)
    assert no_piece_left(scrubbed), scrubbed
    assert scrubbed.startswith("key: ") and scrubbed.endswith(" end") and REDACTED in scrubbed


def test_a_key_split_into_many_short_lines_is_scrubbed_whole():
    text = "\n".join(LONG_KEY[i : i + 3] for i in range(0, len(LONG_KEY), 3))
    assert Scrubber(LONG_KEY).text(text) == REDACTED


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("lead", ["", "a", "0x", "id="])  # an odd digit before it shifts the pairs
def test_the_key_in_hex_is_scrubbed_in_either_case_at_any_digit(upper, lead):
    hexed = LONG_KEY.encode().hex()
    hexed = hexed.upper() if upper else hexed
    scrubbed = Scrubber(LONG_KEY).text(f"{lead}{hexed} tail")
    assert no_piece_left(scrubbed) and scrubbed.endswith(" tail"), scrubbed


def test_a_piece_of_the_key_in_hex_wrapped_over_lines_is_scrubbed():
    hexed = LONG_KEY[5:20].encode().hex()
    text = hexed[:11] + "\n" + hexed[11:]
    assert no_piece_left(Scrubber(LONG_KEY).text(text))


@pytest.mark.parametrize("start", [0, 4, 11, 21])
def test_base64_of_a_piece_from_anywhere_in_the_key_is_scrubbed(start):
    piece = LONG_KEY[start : start + 8].encode()
    for prefix in (b"", b"x", b"xy"):  # each alignment
        encoded = base64.b64encode(prefix + piece).decode()
        assert no_piece_left(Scrubber(LONG_KEY).text(f"data: {encoded}")), encoded


def test_base64_wrapped_at_76_characters_is_scrubbed_across_its_line_breaks():
    encoded = base64.encodebytes(b"Authorization: Bearer " * 3 + LONG_KEY.encode() + b" trailing").decode()
    assert "\n" in encoded.strip()
    assert no_piece_left(Scrubber(LONG_KEY).text(encoded))


def test_backslash_x_escapes_of_the_key_are_scrubbed():
    text = "".join(f"\\x{b:02x}" for b in LONG_KEY.encode())
    assert Scrubber(LONG_KEY).text(f"({text})") == f"({REDACTED})"


@pytest.mark.parametrize("as_objects", [False, True])
def test_a_key_split_over_content_parts_is_scrubbed_as_the_reader_joins_them(as_objects):
    pieces = [LONG_KEY[i : i + 3] for i in range(0, len(LONG_KEY), 3)]
    parts = [{"type": "text", "text": p} for p in pieces] if as_objects else pieces
    body = {"choices": [{"message": {"content": ["start ", *parts, " end"]}}]}
    raw = json.dumps(body)
    scrubbed = Scrubber(LONG_KEY).answer(raw, json.loads(raw))
    content = scrubbed["choices"][0]["message"]["content"]
    joined = "".join(p if isinstance(p, str) else p["text"] for p in content)
    assert no_piece_left(joined) and joined.startswith("start ") and joined.endswith(" end"), joined


def test_a_clean_answer_comes_back_as_it_is_without_a_walk():
    raw = json.dumps({"choices": [{"message": {"content": "all clear"}}], "usage": {"prompt_tokens": 3}})
    parsed = json.loads(raw)
    assert Scrubber(LONG_KEY).answer(raw, parsed) is parsed


SPELLINGS = {
    "plain": lambda p: p,
    "json": lambda p: "".join(f"\\u{ord(c):04x}" for c in p),
    "json, two levels": lambda p: "".join(f"\\\\u{ord(c):04X}" for c in p),
    "url": lambda p: quote(p, safe=""),
    "hex": lambda p: p.encode().hex(),
    "HEX": lambda p: p.encode().hex().upper(),
    "base64": lambda p: base64.b64encode(p.encode()).decode(),
    "urlsafe base64": lambda p: base64.urlsafe_b64encode(b"?" + p.encode()).decode(),
}


@settings(max_examples=300, deadline=None)
@given(
    key=st.text(alphabet=st.sampled_from("abcdefghijkmnopqrstuvwxyzABCDEFGH0123456789-_+/."), min_size=12, max_size=60),
    start=st.integers(min_value=0, max_value=60),
    length=st.integers(min_value=8, max_value=60),
    spelling=st.sampled_from(sorted(SPELLINGS)),
    split=st.one_of(st.none(), st.integers(min_value=1, max_value=59)),
    before=st.text(alphabet=st.sampled_from('ab \n{}":,0'), max_size=20),
    after=st.text(alphabet=st.sampled_from('yz \n{}":,9'), max_size=20),
)
def test_no_piece_of_eight_survives_in_any_spelling_and_the_quick_test_sees_it(
    key, start, length, spelling, split, before, after
):
    """Property: any piece of 8 or more characters, in any spelling, maybe broken by a line, amid any text."""
    if is_placeholder(key):
        return
    start = min(start, len(key) - 8)
    piece = key[start : start + length]
    spelled = SPELLINGS[spelling](piece)
    if split is not None and spelling in ("plain", "json", "url"):  # a break between two characters of the piece
        at = min(split, len(piece) - 1)
        spelled = SPELLINGS[spelling](piece[:at]) + "\n" + SPELLINGS[spelling](piece[at:])
    text = before + spelled + after
    scrubber = Scrubber(key)
    assert scrubber.mentions(text)
    assert leaks(scrubber.text(text), key) == [], (text, scrubber.text(text))


# ---------------------------------------------------------------- the normalised comparison

NORMAL_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90KlMn"


def fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else c for c in text)


NORMALISED_SPELLINGS = {
    "reversed": NORMAL_KEY[::-1],
    "upper-case": NORMAL_KEY.upper(),
    "spaced": " ".join(NORMAL_KEY),
    "dashed": "-".join(NORMAL_KEY),
    "zero-width": "\u200b".join(NORMAL_KEY),
    "HTML entities": "".join(f"&#{ord(c)};" for c in NORMAL_KEY),
    "hex HTML entities": "".join(f"&#x{ord(c):x};" for c in NORMAL_KEY),
    "fullwidth": fullwidth(NORMAL_KEY),
    "lower-case, reversed, escaped": "".join(f"\\u{ord(c):04x}" for c in NORMAL_KEY.lower()[::-1]),
}


@pytest.mark.parametrize("name", sorted(NORMALISED_SPELLINGS))
def test_a_key_spelled_otherwise_is_found_in_its_normalised_form(name):
    spelled = NORMALISED_SPELLINGS[name]
    scrubbed = Scrubber(NORMAL_KEY).text(f"the endpoint said <{spelled}> and more")
    assert scrubbed == f"the endpoint said <{REDACTED}> and more", scrubbed


def test_half_the_key_upper_cased_in_a_json_body_is_found_and_the_rest_of_the_text_kept():
    scrubber = Scrubber(NORMAL_KEY)
    body = json.dumps({"error": {"message": f"Invalid key {NORMAL_KEY[:16].upper()}; see the docs"}})
    assert scrubber.mentions(body)
    assert scrubber.value(json.loads(body)) == {"error": {"message": f"Invalid key {REDACTED}; see the docs"}}


def test_ordinary_text_with_separators_and_case_is_left_alone():
    scrubber = Scrubber(NORMAL_KEY)
    text = "SK - PROJ notes: the plan is A, B and C; 12 34 56. &amp; done\u200b."
    assert not scrubber.mentions(text) and scrubber.text(text) == text
