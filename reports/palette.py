"""The report's colours: one colour per meaning, shared by every figure, so a colour never means two things.

A report shows verdicts, decision makers and token kinds side by side; a reader who learnt that vermillion
means `late` in one figure must not meet it as `llm` in the next. Every figure takes its colours from here,
and a test checks that no two meanings in this module are closer than ``DISTINCT`` (CIE76 distance in
Lab). Modes and models are never coloured: they are the rows of every figure, named on its axis.
"""

from __future__ import annotations

from harness.records.verdicts import CATALOGUE

# Colour-blind-safe (Okabe-Ito) and black: the verdicts' swatches, named by the catalogue
# (harness/records/verdicts.py); failed_closed is a safe failure, so it is blue; infrastructure, not judged, black.
SWATCHES = {
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "orange": "#E69F00",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
    "grey": "#999999",
    "sky blue": "#56B4E9",
    "black": "#000000",
    "blue": "#0072B2",
}
VERDICTS = {name: SWATCHES[verdict.colour] for name, verdict in CATALOGUE.items()}  # every verdict, judged or not
CORRECT_ORACLE_FAILED = "#BFE5D6"  # a tint of `correct`, hatched: the right stop with work the oracle faults
STOP_CORRECT = VERDICTS["correct"]  # the stop-correct rate is the share of `correct` verdicts: the same colour
NOT_APPLICABLE = "#F2F2F2"  # hatched grey: no rate at all (every run stood at its own unanswered plan review)
# Who decided (Paul Tol's "muted" scheme, none close to a verdict's colour).
DECISION_MAKERS = {
    "llm": "#332288",
    "runtime": "#44AA99",
    "executor": "#882255",
    "workflow": "#117733",
    "plan_validator": "#999933",
    "gateway": "#DDCC77",
    "human": "#AA4499",
    "framework": "#555555",
}
TOKENS = {"prompt": "#BBCCEE", "completion": "#222255"}
MEDIAN = "#000000"  # a box plot's median: black, a mark rather than a meaning
NO_DATA_TEXT = "#555555"  # "nothing recorded" notes inside an empty panel

# Every meaning with its colour, for the test and for anyone adding one: add it here, not in a figure.
MEANINGS: dict[str, str] = {
    **{f"verdict {k}": v for k, v in VERDICTS.items()},
    "verdict correct, oracle failed": CORRECT_ORACLE_FAILED,
    "not applicable": NOT_APPLICABLE,
    **{f"decision maker {k}": v for k, v in DECISION_MAKERS.items()},
    **{f"{k} tokens": v for k, v in TOKENS.items()},
}
DISTINCT = 15.0  # CIE76 distance: below about 10 two swatches read as one colour in a legend
