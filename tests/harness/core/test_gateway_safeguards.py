"""The gateway's seed-003 safeguards: the input scanner (block, redact), the per-user tool cache with its
time-to-live, and the audit hashes every record carries."""

from __future__ import annotations

import pytest

from harness.core.audit_hash import audit_hash, canonical_json
from harness.core.gateway import Gateway
from harness.core.input_scanner import cn_id_ok, luhn_ok, redact, scan
from harness.core.store import VirtualStore
from harness.scenario.model import InputScanner
from tests.helpers.units import scenario

STORY = """
id: unit_safeguards
title: Unit safeguards
source: unit tests
task: Look up the policy and log a note.
rules:
  - {id: no_card_data, text: Never log card data., precedence: 1, obeyed: true}
actions:
  - name: lookup
    description: Look up a user's policy.
    effect: read
    reads: policy
    latency_ms: 100
    cache: {key: [user_id], user: user_id, ttl_ms: 1000}
    args: {type: object, properties: {user_id: {type: string}}, required: [user_id]}
  - name: slow
    description: A slow read.
    effect: read
    latency_ms: 2000
    returns: {ok: true}
  - name: flaky_lookup
    description: A cached lookup that fails first.
    effect: read
    returns: {found: true}
    cache: {ttl_ms: 1000}
    fault: {fail_first: 1, error: "HTTP 503"}
  - name: update_policy
    description: Change the policy.
    effect: write
    writes: policy
    args: {type: object, properties: {status: {type: string}}, required: [status]}
  - name: note
    description: Log a note.
    effect: write
    writes: note
    args: {type: object, properties: {text: {type: string}}, required: [text]}
  - {name: finish, kind: finish, description: End the run.}
store:
  artifacts: {policy: {status: active}}
workflow:
  start: look
  nodes:
    - {id: look, type: action, action: lookup, args: {user_id: u1}, next: done}
    - {id: done, type: end}
oracle:
  expected_stop: finished
  reference_path: [lookup, finish]
"""

CARD = "4111 1111 1111 1111"  # a test card number: passes the Luhn check


def gateway(policy: str = "enforce", scanner: dict | None = None) -> Gateway:
    s = scenario(STORY, **({"scanner": scanner} if scanner is not None else {}))
    return Gateway(s, VirtualStore.for_scenario(s), policy)  # type: ignore[arg-type]


def call(g: Gateway, name: str, args: object, step: int = 1, timeout_ms: int | None = None):
    return g.execute(name, args, allowed=[a.name for a in g.scenario.actions], step=step, timeout_ms=timeout_ms)


# ---------------------------------------------------------------- detectors


@pytest.mark.parametrize("number", ["4111111111111111", "5500 0000 0000 0004", "3400-000000-00009"])
def test_card_numbers_that_pass_luhn_are_found(number):
    assert [f.kind for f in scan(InputScanner(action="block"), {"t": f"card {number} please"})] == ["card_number"]


def test_a_long_number_that_fails_luhn_is_not_a_card():
    assert not luhn_ok("4111111111111112")
    assert scan(InputScanner(action="block", detect=("card_number",)), {"t": "order 4111111111111112"}) == []


def test_national_ids_are_found_with_their_check_digit():
    assert cn_id_ok("11010519491231002X") and not cn_id_ok("110105194912310021")
    found = scan(InputScanner(action="block", detect=("national_id",)), ["ssn 078-05-1120", "id 11010519491231002X"])
    assert [(f.path, f.kind) for f in found] == [("[0]", "national_id"), ("[1]", "national_id")]
    assert scan(InputScanner(action="block", detect=("national_id",)), ["id 110105194912310021"]) == []


@pytest.mark.parametrize(
    "text",
    ["AKIAIOSFODNN7EXAMPLE", "ghp_" + "a1B2" * 9, "sk-proj-" + "x" * 24, "api_key = 'abcdefghijklmnop'"],
)
def test_secrets_are_found(text):
    assert [f.kind for f in scan(InputScanner(action="block", detect=("secret",)), {"note": text})] == ["secret"]


def test_redaction_replaces_only_what_was_found():
    redacted = redact(InputScanner(action="redact"), {"a": f"pay with {CARD} today", "n": 3, "b": ["clean"]})
    assert redacted == {"a": "pay with [redacted:card_number] today", "n": 3, "b": ["clean"]}


# ---------------------------------------------------------------- the scanner at the gateway


def test_block_refuses_the_call_with_its_own_reason_and_never_stores_the_value():
    g = gateway(scanner={"action": "block"})
    record = call(g, "note", {"text": f"card {CARD}"})
    assert (record.status, record.reason) == ("blocked", "sensitive_input")
    assert "note" not in g.store.artifacts
    assert CARD not in str(record.args) and record.redacted == ("card_number at text",)


def test_block_under_audit_commits_redacted_and_records_the_violation():
    g = gateway("audit", scanner={"action": "block"})
    record = call(g, "note", {"text": f"card {CARD}"})
    assert record.status == "committed" and "sensitive_input" in record.violations
    assert g.store.artifacts["note"] == {"text": "card [redacted:card_number]"}


def test_redact_commits_with_the_value_replaced_before_the_store_sees_it():
    g = gateway(scanner={"action": "redact"})
    record = call(g, "note", {"text": f"card {CARD}"})
    assert record.status == "committed" and record.violations == ()
    assert g.store.artifacts["note"] == {"text": "card [redacted:card_number]"}
    assert record.redacted == ("card_number at text",)


def test_actions_the_scanner_does_not_list_are_not_scanned():
    g = gateway(scanner={"action": "block", "actions": ["lookup"]})
    assert call(g, "note", {"text": f"card {CARD}"}).status == "committed"


# ---------------------------------------------------------------- the tool cache


def test_a_repeated_lookup_by_the_same_user_is_a_hit_and_the_tool_does_not_run():
    g = gateway()
    first, second = call(g, "lookup", {"user_id": "u1"}), call(g, "lookup", {"user_id": "u1"}, step=2)
    assert (first.cache, second.cache) == ("miss", "hit")
    assert second.observation == first.observation and second.status == "read"
    assert g.store.calls["lookup"] == 1 and second.duration_ms is None


def test_another_user_misses():
    g = gateway()
    call(g, "lookup", {"user_id": "u1"})
    assert call(g, "lookup", {"user_id": "u2"}).cache == "miss"


def test_an_entry_expires_after_its_ttl_in_simulated_time():
    g = gateway()
    call(g, "lookup", {"user_id": "u1"})  # stored at 100 ms (its own duration)
    call(g, "slow", {})  # 2000 ms of simulated time pass
    assert call(g, "lookup", {"user_id": "u1"}).cache == "miss"


def test_a_write_to_what_the_action_reads_drops_its_entries():
    g = gateway()
    call(g, "lookup", {"user_id": "u1"})
    call(g, "update_policy", {"status": "lapsed"})
    again = call(g, "lookup", {"user_id": "u1"})
    assert again.cache == "miss" and again.observation == {"policy": {"status": "lapsed"}}


def test_a_failed_call_is_never_cached():
    g = gateway()
    failed, answered, cached = (call(g, "flaky_lookup", {}, step=n) for n in (1, 2, 3))
    assert (failed.status, failed.cache) == ("failed", "miss")
    assert (answered.cache, cached.cache) == ("miss", "hit")


def test_a_blocked_call_is_never_served_from_the_cache():
    g = gateway()
    call(g, "lookup", {"user_id": "u1"})
    blocked = g.execute("lookup", {"user_id": "u1"}, allowed=[], step=2)
    assert blocked.status == "blocked" and blocked.cache is None


# ---------------------------------------------------------------- audit hashes


def test_every_record_carries_the_hashes_of_its_recorded_args_and_result():
    g = gateway(scanner={"action": "block"})
    records = [call(g, "lookup", {"user_id": "u1"}), call(g, "note", {"text": f"card {CARD}"}), call(g, "nope", {})]
    for record in records:
        assert record.input_hash == audit_hash(record.args)
        assert record.output_hash == audit_hash(record.observation)
    assert records[0].input_hash != records[1].input_hash


def test_canonical_json_ignores_key_order_and_keeps_non_ascii():
    assert canonical_json({"b": 1, "a": "粤B"}) == canonical_json({"a": "粤B", "b": 1}) == '{"a":"粤B","b":1}'
    assert audit_hash({"b": 1, "a": 2}) == audit_hash({"a": 2, "b": 1}) and audit_hash(1).startswith("sha256:")
