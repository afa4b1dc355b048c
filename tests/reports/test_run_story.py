"""The other trials of a run's cell, linked from its page: found for every run of a report in one pass."""

from __future__ import annotations

from reports.run_story import siblings_by_run, siblings_of


def test_every_run_gets_the_trials_of_its_own_cell_by_trial_from_one_pass():
    cells = [
        ("r3", ("s", "react", "m", "enforce"), 2, "r3.html"),
        ("r1", ("s", "react", "m", "enforce"), 1, "r1.html"),
        ("w1", ("s", "workflow", "m", "enforce"), None, None),
        ("r9", ("s", "react", "m", "audit"), 1, "r9.html"),
        ("r1", ("t", "react", "m", "enforce"), 1, "r1-2.html"),  # the same id in a second folder: its first cell
    ]
    every = siblings_by_run(cells)
    shown = {run_id: [(s.run_id, s.trial, s.href, s.itself) for s in found] for run_id, found in every.items()}
    assert shown == {
        "r3": [("r1", 1, "r1.html", False), ("r3", 2, "r3.html", True)],
        "r1": [("r1", 1, "r1.html", True), ("r3", 2, "r3.html", False)],  # not the second folder's r1
        "w1": [("w1", None, None, True)],
        "r9": [("r9", 1, "r9.html", True)],  # another policy: another cell
    }
    assert siblings_of(cells, "r9") == every["r9"]
    assert siblings_of(cells, "absent") == []
