"""Who decided what, kind by kind: per group, the mean events per complete run of each (kind, decision maker).

One share of every choice-recording event pools a model's proposal, a workflow transition and a gateway
verdict as equal votes and reads as "who controls the run", which no trace fact says. Counted kind by kind
instead, per run, each number is a plain count of the trace: how often the model proposed a next step, how
often code ruled on one (accepted, refused, executed, stopped), how often a workflow transition chose the next
node, and how often a gate gave its verdict (the action gateway, a person at a gate). Refusals are counted
apart inside each kind: a refused proposal and a blocked action are the rules winning a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# Event kind -> the kind of decision it records, in the order the figure shows them (docs/trace-schema.md).
DECISION_KINDS: dict[str, str] = {
    "model_call": "proposal",
    "decision": "ruling",
    "plan_validation": "ruling",
    "suspend": "ruling",
    "transition": "transition",
    "action": "gate verdict",
    "human": "gate verdict",
}
KIND_TITLES = {  # short: a panel is a quarter of a column wide
    "proposal": "proposals",
    "ruling": "rulings",
    "transition": "transitions",
    "gate verdict": "gate verdicts",
}
# An event's result that says no: a code's refusal, a plan validator's REJECT or REVISE, a gateway's block, a
# person's rejection.
REFUSALS = frozenset({"refused", "ignored", "REJECT", "REVISE", "blocked", "reject", "rejected"})


@dataclass(frozen=True)
class DecisionTally:
    """One group's decisions: its complete runs and, per (kind, decision maker, refused), events per run."""

    runs: int
    per_run: dict[tuple[str, str, bool], float]

    def of(self, kind: str, maker: str, refused: bool) -> float:
        return self.per_run.get((kind, maker, refused), 0.0)

    def of_kind(self, kind: str) -> float:
        return sum(v for (k, _, _), v in self.per_run.items() if k == kind)


def decision_tallies(events: pd.DataFrame, keys: tuple[str, ...]) -> dict[tuple[str, ...], DecisionTally]:
    """Per group of ``keys`` (as in ``GroupMetrics.key``): the decision events of its complete runs, per run.

    ``events`` needs the key columns, ``run_id``, ``kind``, ``decision_maker``, ``result`` and ``complete``.
    """
    complete = events.loc[events["complete"].to_numpy(dtype=bool)]
    if complete.empty:
        return {}
    runs = complete.groupby(list(keys), observed=True)["run_id"].nunique()
    deciding = complete.loc[complete["kind"].isin(list(DECISION_KINDS))]
    frame = pd.DataFrame(
        {
            **{k: deciding[k].astype(str).to_numpy() for k in keys},
            "decision": deciding["kind"].astype(str).map(DECISION_KINDS).to_numpy(),
            "maker": deciding["decision_maker"].astype(str).to_numpy(),
            "refused": deciding["result"].astype(str).isin(REFUSALS).to_numpy(),
        }
    )
    counts = frame.groupby([*keys, "decision", "maker", "refused"]).size()
    tallies: dict[tuple[str, ...], dict[tuple[str, str, bool], float]] = {}
    for index, n in counts.items():
        parts = tuple(index) if isinstance(index, tuple) else (index,)
        tallies.setdefault(tuple(str(p) for p in parts[: len(keys)]), {})[
            (str(parts[-3]), str(parts[-2]), bool(parts[-1]))
        ] = float(n)
    found = {}
    for index, n_runs in runs.items():
        key = tuple(str(p) for p in (index if isinstance(index, tuple) else (index,)))
        found[key] = DecisionTally(
            int(n_runs), {k: v / n_runs for k, v in tallies.get(key, {}).items()} if n_runs else {}
        )
    return found
