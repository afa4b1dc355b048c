"""The preflight tells an endpoint from a URL that is none, in one line, tries a busy one again as run requests would,
and names a silent one; the failure streak stops a matrix only after K model calls in a row failed at the endpoint."""

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

    return preflight(CONFIG, transport=httpx.MockTransport(handler), sleep=lambda s: None)


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
        httpx.Response(500, json={"error": {"message": "overloaded"}}),  # still after the retries
    ],
)
def test_an_endpoint_that_answers_json_is_there_whatever_the_status(response):
    assert answered(response) is None


def test_an_endpoint_busy_on_every_try_is_noted_and_started_anyway():
    assert "HTTP 429 (busy) 4 times" in (answered(httpx.Response(429, text="slow down")) or "")


def scripted(*answers: httpx.Response | Exception) -> tuple[list[float], list[str]]:
    """Preflights an endpoint answering ``answers`` in turn; the waits it slept and what it asked, in order."""
    slept: list[float] = []
    script = iter(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        answer = next(script)
        if isinstance(answer, Exception):
            raise answer
        return answer

    preflight(CONFIG, transport=httpx.MockTransport(handler), sleep=slept.append)
    return slept, [repr(a) for a in script]


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_busy_endpoint_answering_5xx_twice_is_tried_again_with_the_run_requests_back_off(status):
    ok = httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})
    busy = httpx.Response(status, headers={"Content-Type": "text/plain"}, text="Service Unavailable")
    slept, left = scripted(busy, busy, ok, ok)
    assert len(left) == 1 and len(slept) == 2
    assert 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0  # --backoff 1: half fixed, half jitter, doubling


def test_retry_after_sets_the_preflights_wait_as_it_does_a_run_requests():
    ok = httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})
    slept, _ = scripted(httpx.Response(429, headers={"Retry-After": "7"}, json={}), ok)
    assert slept == [7.0]


def test_a_5xx_page_on_every_try_is_no_endpoint():
    line = refused(httpx.Response(503, headers={"Content-Type": "text/plain"}, text="Service Unavailable"))
    assert "HTTP 503, not JSON: text/plain: Service Unavailable" in line


def test_a_silent_endpoint_is_named_in_one_line_after_its_tries_with_a_short_read_timeout():
    timeouts: list[object] = []

    def handler(request: httpx.Request) -> httpx.Response:
        timeouts.append(request.extensions["timeout"])
        raise httpx.ReadTimeout("silent")

    with pytest.raises(EndpointUnusable) as caught:
        preflight(
            LiveConfig(url=URL, model="m", api_key=KEY), transport=httpx.MockTransport(handler), sleep=lambda s: None
        )
    line = str(caught.value)
    assert "accepted the connection but did not answer a one-token request within 10s, 4 times" in line, line
    assert len(timeouts) == 4 and timeouts[0] == {"connect": 10.0, "read": 10.0, "write": 10.0, "pool": 10.0}


# ---------------------------------------------------------------- the streak


def run(status: str = "error", verdict: str = "infrastructure", calls: int = 1, **errors: int) -> SimpleNamespace:
    return SimpleNamespace(status=status, stop_verdict=verdict, errors=errors, llm_calls=calls)


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
        run(replay_miss=1),  # an infrastructure error no endpoint causes
    ],
)
def test_a_run_that_ends_otherwise_starts_the_count_again(between):
    streak = FailureStreak(3)
    for outcome in (run(http_5xx=1), run(http_5xx=1), between, run(http_5xx=1), run(http_5xx=1)):
        streak.add(outcome)
    assert list(streak.cells(range(4))) == [0, 1, 2, 3] and streak.line() is None


def test_runs_with_no_model_call_neither_count_nor_break_the_streak_and_any_endpoint_error_counts():
    streak = FailureStreak(3)
    no_call = run("suspended", "correct", calls=0)
    for outcome in (run(timeout=1), no_call, run(network=1), no_call, no_call, run(timeout=1)):
        streak.add(outcome)
    assert list(streak.cells(range(3))) == [] and streak.cut
    assert streak.line() is not None and "3 runs in a row ended in network and timeout" in streak.line()


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
