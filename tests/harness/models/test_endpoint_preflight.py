"""The preflight tells an endpoint from a URL that is none, in one line, and the failure streak stops a matrix only
after K runs in a row end in the same endpoint error."""

from __future__ import annotations

import json
from types import SimpleNamespace

import httpx
import pytest

from harness.models.dead_endpoint import (
    EndpointUnusable,
    FailureStreak,
    is_preflight,
    preflight,
    preflight_body,
)
from harness.models.live import LiveConfig

KEY = "sk-preflight-test-0123456789"
URL = "http://model.test/v1/chat/completions?api-version=2024&token=hidden"
CONFIG = LiveConfig(url=URL, model="m", api_key=KEY, timeout_s=5.0)


def answered(response: httpx.Response | Exception) -> str | None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert is_preflight(json.loads(request.content)) and request.headers["Authorization"] == f"Bearer {KEY}"
        if isinstance(response, Exception):
            raise response
        return response

    return preflight(CONFIG, transport=httpx.MockTransport(handler))


def refused(response: httpx.Response | Exception) -> str:
    with pytest.raises(EndpointUnusable) as caught:
        answered(response)
    line = str(caught.value)
    assert "\n" not in line and KEY[:8] not in line and "hidden" not in line, line
    assert line.startswith(
        "http://model.test/v1/chat/completions?api-version=2024&token=[redacted] does not look like "
        "an OpenAI-compatible endpoint: "
    ), line
    return line


def test_the_preflight_is_one_token_of_one_message_and_exits_3():
    body = preflight_body(CONFIG)
    assert body == {"model": "m", "messages": [{"role": "user", "content": "Reply with the word ok."}], "max_tokens": 1}
    assert EndpointUnusable("x").exit_code == 3


def test_nothing_listening_is_no_endpoint():
    line = refused(httpx.ConnectError("[Errno 111] Connection refused"))
    assert line.endswith("no connection (ConnectError: [Errno 111] Connection refused) (check LLM_API_URL; "
                         "bench probe shows what the endpoint supports)")  # fmt: skip


def test_no_connection_within_the_connect_timeout_is_no_endpoint():
    assert "no connection within 5s" in refused(httpx.ConnectTimeout("timed out"))


@pytest.mark.parametrize("status", [404, 405, 501])
def test_a_chat_path_that_is_not_there_is_no_endpoint_whatever_it_says(status):
    line = refused(httpx.Response(status, json={"error": {"message": "not here"}}))
    assert f"HTTP {status}, application/json: " in line


def test_a_web_page_is_named_by_its_title_and_a_redirect_by_where_it_goes():
    page = "<html><head><title>Sign in\n to Portal</title></head><body>" + "x" * 5000 + "</body></html>"
    line = refused(
        httpx.Response(302, headers={"Location": "https://login.test/", "Content-Type": "text/html"}, text=page)
    )
    assert (
        "HTTP 302, not JSON: text/html, redirecting to https://login.test/, a web page titled 'Sign in to Portal'"
        in line
    )
    assert "xxxx" not in line


def test_an_empty_or_plain_text_answer_is_no_endpoint():
    assert "an empty body" in refused(httpx.Response(200, content=b""))
    line = refused(httpx.Response(502, headers={"Content-Type": "text/plain"}, text="Bad Gateway"))
    assert "HTTP 502, not JSON: text/plain: Bad Gateway (check" in line


def test_a_key_echoed_in_what_came_back_is_scrubbed_even_split_and_in_hex():
    text = f"<title>{KEY[:10]}\n{KEY[10:]} {KEY.encode().hex()}</title>"
    line = refused(httpx.Response(200, headers={"Content-Type": "text/html"}, text=text))
    assert "[redacted]" in line and KEY[10:18] not in line and KEY.encode().hex()[:16] not in line


def test_json_that_is_no_chat_completion_is_no_endpoint():
    assert "HTTP 200 without choices" in refused(httpx.Response(200, json={"status": "ok"}))
    assert "JSON that is not an object" in refused(httpx.Response(200, json=[1, 2]))


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]}),
        httpx.Response(400, json={"error": {"message": "max_tokens is not supported"}}),
        httpx.Response(401, json={"error": {"message": "bad key"}}),
        httpx.Response(500, json={"error": {"message": "overloaded"}}),
        httpx.Response(429, text="slow down"),  # busy is there, whatever it says
    ],
)
def test_an_endpoint_that_answers_json_is_there_whatever_the_status(response):
    assert answered(response) is None


def test_a_first_request_that_times_out_is_only_noted():
    assert "did not answer a first request within 5s" in (answered(httpx.ReadTimeout("slow")) or "")


# ---------------------------------------------------------------- the streak


def run(status: str = "error", verdict: str = "infrastructure", **errors: int) -> SimpleNamespace:
    return SimpleNamespace(status=status, stop_verdict=verdict, errors=errors)


def test_k_runs_in_a_row_with_the_same_endpoint_error_stop_the_cells_that_remain():
    streak = FailureStreak(3)
    taken = []
    for cell in streak.cells(range(10)):
        taken.append(cell)
        streak.add(run(network=1))
    assert taken == [0, 1, 2] and streak.cut
    streak.last_error = lambda: "ConnectError: [Errno 111] Connection refused"
    assert streak.line() == (
        "stopped after 3 runs in a row ended in network (the last: ConnectError: [Errno 111] Connection refused); "
        "the rest of the matrix was not started (--stop-after-failures 3; 0 never stops)"
    )


@pytest.mark.parametrize(
    "between",
    [
        run("finished", "correct"),  # a run that worked
        run(verdict="failed_closed", schema=1),  # the model's own error: judged
        run(timeout=1),  # another endpoint error
        run(replay_miss=1),  # an infrastructure error no endpoint causes
    ],
)
def test_a_run_that_ends_otherwise_starts_the_count_again(between):
    streak = FailureStreak(3)
    for outcome in (run(http_5xx=1), run(http_5xx=1), between, run(http_5xx=1), run(http_5xx=1)):
        streak.add(outcome)
    assert list(streak.cells(range(4))) == [0, 1, 2, 3] and streak.line() is None


def test_an_interrupted_run_neither_counts_nor_breaks_the_streak():
    streak = FailureStreak(2)
    for outcome in (run(network=1), run("interrupted"), run(network=1)):
        streak.add(outcome)
    assert list(streak.cells(range(5))) == [] and streak.cut


def test_zero_never_stops_and_a_streak_on_the_last_cell_stops_nothing():
    never = FailureStreak(0)
    for _ in range(50):
        never.add(run(network=1))
    assert list(never.cells(range(3))) == [0, 1, 2]
    last = FailureStreak(2)
    for _ in last.cells(range(2)):
        last.add(run(network=1))
    assert not last.cut and last.line() is None  # the matrix ran whole: nothing was stopped


def test_only_a_live_matrix_has_a_streak():
    assert FailureStreak.for_run(False, 10).limit == 0 and FailureStreak.for_run(True, 10).limit == 10
