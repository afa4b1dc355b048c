"""The key scrub's cost per model call, next to the model call itself, on the committed recording's real exchanges.

Every live call checks the request body as sent and scrubs the answer (``harness.models.scrub``): the quick
test on both texts, and the walk of an answer only where it may hold a piece of the key. This replays that
work on each of the recording's 1,078 exchanges (bodies of 2-8 KB) for a short key and for a 164-character
one (OpenAI's project keys), clean and with the key echoed split over a line and in hex, and compares the
median cost with the median recorded latency of a model call. Target: under 0.1% of a model call.
Run: .venv/bin/python benchmarks/key_scrub.py [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.models.scrub import Scrubber  # noqa: E402

RECORDING = ROOT / "results" / "recorded" / "smollm2-135m" / "recording.jsonl"
TARGET = 0.001
KEYS = {
    "27-character key": "sk-LEAK-4f9c2e7a1b8d6053xyz",
    "164-character key": "sk-proj-"
    + "".join("AbCdEfGh0123456789ijKLmnOPqrSTuvWXyz_-"[(i * 7) % 38] for i in range(156)),
}


def exchanges() -> tuple[list[tuple[str, str]], float]:
    """(request body as sent, answer body as received) of every recorded call that has an answer, and the median
    latency of all of them."""
    pairs, latencies = [], []
    for line in RECORDING.read_text().splitlines():
        exchange = json.loads(line)["exchange"]
        latencies.append(exchange["latency_ms"])
        if isinstance(exchange["response"], dict) and exchange["response"].get("choices"):
            request = json.dumps(exchange["request"], ensure_ascii=False, separators=(",", ":"))
            pairs.append((request, json.dumps(exchange["response"])))
    return pairs, statistics.median(latencies)


def echoed(answer: str, key: str) -> str:
    """The answer with the key echoed into its text, split over a line and in hex."""
    body = json.loads(answer)
    body["choices"][0]["message"]["content"] += f" {key[:13]}\n{key[13:]} {key.encode().hex()}"
    return json.dumps(body)


def parse_us(pairs: list[tuple[str, str]]) -> float:
    """Microseconds per call to parse the answer, which the live client does whether or not it scrubs."""
    started = time.perf_counter()
    for _, answer in pairs:
        json.loads(answer)
    return (time.perf_counter() - started) / len(pairs) * 1e6


def per_call_us(scrubber: Scrubber, pairs: list[tuple[str, str]]) -> float:
    """Microseconds per call: the request check and the answer's scrub, as the live client does them."""
    started = time.perf_counter()
    for request, answer in pairs:
        scrubber.mentions(request)
        scrubber.answer(answer, json.loads(answer))
    return (time.perf_counter() - started) / len(pairs) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds, median taken (default 5)")
    args = parser.parse_args()
    pairs, call_ms = exchanges()
    parsing = statistics.median(parse_us(pairs) for _ in range(args.rounds))  # the client parses anyway: taken out
    print(f"reference model call: {call_ms:,.1f} ms = median recorded latency; {len(pairs)} answered calls")
    print(f"{'key':<18} {'answers':<22} {'per call':>10} {'/ model call':>13}  verdict")
    failed = False
    for name, key in KEYS.items():
        scrubber = Scrubber(key)
        for label, batch in (("clean", pairs), ("key split and in hex", [(r, echoed(a, key)) for r, a in pairs])):
            cost = max(0.0, statistics.median(per_call_us(scrubber, batch) for _ in range(args.rounds)) - parsing)
            share = cost / (call_ms * 1000)
            failed |= share > TARGET
            print(f"{name:<18} {label:<22} {cost:>7,.0f} us {share:>12.4%}  {'ok' if share <= TARGET else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
