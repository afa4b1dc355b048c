"""The table ``bench run`` prints when a matrix ends: counted run by run as outcomes arrive.

Nothing is kept per run: counters per mode and gateway policy (and per scenario cell for pass^k), so
``bench run``'s memory stays flat however many runs it makes. The numbers and the table are the
report's headline (``reports.tables.headline_table``) with the same definitions (a run ended by
infrastructure or a signal, or standing at its mode's own unanswered plan review, is not judged);
``bench report`` gives everything else.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.records.verdicts import right_place_wrong_work

if TYPE_CHECKING:
    from harness.matrix.cell.units import Cell
    from harness.records.trace import RunOutcome


@dataclass
class _Group:
    judged: int = 0
    infrastructure: int = 0
    unanswered: int = 0  # stopped at the mode's own plan review, unanswered: not judged (reports.metrics)
    verdicts: Counter[str] = field(default_factory=Counter)
    oracle_passed: int = 0
    right_place_wrong_work: int = 0  # stopped at the right place, broke a value or argument rule (records.verdicts)
    unauthorized: int = 0
    premature: int = 0
    blocked: int = 0
    cells: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))  # scenario: correct, n


class RunTally:
    """Per mode and gateway policy: the stop verdicts, oracle passes, side effects and what pass^k needs."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str, str], _Group] = {}
        self.model = ""  # the label of the model whose runs are counted now (a matrix of several runs one by one)

    def add(self, cell: Cell, outcome: RunOutcome) -> None:
        group = self._groups.setdefault((self.model, cell.mode, outcome.gateway_policy), _Group())
        if outcome.stop_verdict == "infrastructure":
            group.infrastructure += 1
            return
        from reports.metrics import unanswered_review

        if unanswered_review(outcome.status, outcome.suspended_at, outcome.stop_verdict):
            group.unanswered += 1
            return
        group.judged += 1
        group.verdicts[outcome.stop_verdict] += 1
        group.oracle_passed += outcome.oracle_passed
        group.right_place_wrong_work += right_place_wrong_work(
            outcome.stop_verdict, outcome.status, outcome.suspended_at, outcome.expected_stop, outcome.violations
        )
        group.unauthorized += outcome.unauthorized_side_effects
        group.premature += outcome.premature_side_effects
        group.blocked += outcome.side_effects_blocked
        tally = group.cells[cell.scenario.id]
        tally[0] += outcome.stop_correct
        tally[1] += 1

    def table(self, limit: int | None = None) -> str:
        if not self._groups:
            return "(no runs)"
        from modes import MODES
        from reports.clustered import cluster_bootstrap
        from reports.stats import pass_hat_k, wilson
        from reports.tables import Headline, headline_table, to_terminal

        # k as in bench report (reports.metrics): the most any row allows, a row the fewest judged trials of its cells
        allowed = [min(n for _, n in g.cells.values()) for g in self._groups.values() if g.cells]
        k = min(max(allowed), 20) if allowed else 0
        order = sorted(self._groups, key=lambda key: (key[0], getattr(MODES.get(key[1]), "spectrum", 99), key))
        several = len({model for model, _, _ in order}) > 1  # then a row per model and mode, as bench report's
        rows = []
        for model, mode, policy in order:
            group = self._groups[(model, mode, policy)]
            per_task = [(correct, n) for correct, n in group.cells.values()]
            rows.append(
                Headline(
                    key=(model, mode, policy) if several else (mode, policy),
                    judged=group.judged,
                    verdicts=dict(group.verdicts),
                    infrastructure=group.infrastructure,
                    stop=wilson(group.verdicts["correct"], group.judged),
                    stop_ci=cluster_bootstrap([c for c, _ in per_task], [n for _, n in per_task])[0],
                    oracle=wilson(group.oracle_passed, group.judged),
                    pass_k=pass_hat_k(per_task, k) if k else None,
                    unauthorized=group.unauthorized,
                    premature=group.premature,
                    blocked=group.blocked,
                    unanswered=group.unanswered,
                    right_place_wrong_work=group.right_place_wrong_work,
                )
            )
        if several:
            table = headline_table("model", ("model", "mode", "gateway_policy"), rows, k, "model x mode x policy")
        else:
            table = headline_table("mode", ("mode", "gateway_policy"), rows, k, "mode x policy")
        return "\n".join([to_terminal(table, limit), "", table.note])  # the legend: the columns' own descriptions
