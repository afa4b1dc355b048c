"""Mutation testing of the core modules with mutmut: runs it (config: [tool.mutmut] in pyproject.toml) and prints
the mutation score per module and every surviving mutant, marking those docs/development.md lists as equivalent.

    .venv/bin/python scripts/mutation.py                      # every core module (tens of minutes on 2 cores)
    .venv/bin/python scripts/mutation.py gateway outcome      # some of them
    .venv/bin/python scripts/mutation.py --report-only        # the score of the last run, without running
    .venv/bin/python scripts/mutation.py gateway --show       # ... with the diff of each survivor

Exit code 1 when a module scores under --target (default 90%) counting equivalent mutants as killed, else 0.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = Path(sys.executable).with_name("mutmut")
# module label -> mutant name patterns (mutmut names a mutant module.function__mutmut_N, methods as xǁClassǁname)
CORE: dict[str, tuple[str, ...]] = {
    "gateway": ("harness.core.gateway.*",),
    "outcome": ("harness.core.outcome.*",),
    "executors": ("modes.executor.*",),
    "validator": ("modes.plan_validated.x_validate_plan__mutmut_*",),
    "trace writer": ("harness.records.trace.*",),
    "loader": ("reports.load.*",),
    "live client": ("harness.models.live.*",),
}
KILLED = {"killed", "timeout", "caught by type check", "segfault"}  # a test (or the checker) noticed the mutant
NOT_TRIED = {"skipped", "not checked", "check was interrupted by user"}
EQUIVALENT_SECTION = "### Equivalent mutants"


@dataclass
class Score:
    """One module's mutants by status, its survivors, and those of them the docs show to be equivalent."""

    statuses: Counter[str] = field(default_factory=Counter)
    survivors: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)

    @property
    def tried(self) -> int:
        return sum(n for status, n in self.statuses.items() if status not in NOT_TRIED)

    @property
    def killed(self) -> int:
        return sum(n for status, n in self.statuses.items() if status in KILLED)

    def rate(self, *, with_equivalent: bool = False) -> float:
        killed = self.killed + (len(self.equivalent) if with_equivalent else 0)
        return killed / self.tried if self.tried else float("nan")


def results() -> dict[str, str]:
    """Every mutant's status from mutmut's stored results (``mutmut results --all true``)."""
    out = subprocess.run(
        [str(MUTMUT), "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            found[name] = status
    return found


def equivalent_mutants(doc: Path = ROOT / "docs" / "development.md") -> set[str]:
    """Mutant names listed in the development doc's section on equivalent mutants."""
    text = doc.read_text(encoding="utf-8")
    start = text.find(EQUIVALENT_SECTION)
    if start < 0:
        return set()
    section = text[start + len(EQUIVALENT_SECTION) :]
    end = re.search(r"^#{1,3} ", section, flags=re.MULTILINE)
    section = section[: end.start()] if end else section
    return set(re.findall(r"`([\w.ǁ]+__mutmut_\d+)`", section))


def scores(statuses: dict[str, str], modules: list[str], equivalent: set[str]) -> dict[str, Score]:
    found = {label: Score() for label in modules}
    for name, status in sorted(statuses.items()):
        for label in modules:
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in CORE[label]):
                score = found[label]
                score.statuses[status] += 1
                if status not in KILLED and status not in NOT_TRIED:
                    (score.equivalent if name in equivalent else score.survivors).append(name)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", choices=[[], *CORE], help="core modules (default: all)")
    parser.add_argument("--report-only", action="store_true", help="print the last run's scores, run nothing")
    parser.add_argument("--max-children", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("--target", type=float, default=90.0, help="percent killed each module must reach")
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    args = parser.parse_args()
    modules = list(args.modules) or list(CORE)
    if not args.report_only:
        patterns = [pattern for label in modules for pattern in CORE[label]]
        run = subprocess.run([str(MUTMUT), "run", "--max-children", str(args.max_children), *patterns], cwd=ROOT)
        if run.returncode != 0:
            print(f"mutmut run exited {run.returncode}", file=sys.stderr)
            return run.returncode
    found = scores(results(), modules, equivalent_mutants())
    print(f"\n{'module':<14}{'mutants':>9}{'killed':>8}{'survived':>10}{'equivalent':>12}{'score':>8}{'w/ equiv':>10}")
    failed = False
    for label in modules:
        score = found[label]
        rate, with_equivalent = score.rate(), score.rate(with_equivalent=True)
        failed |= not with_equivalent * 100 >= args.target
        print(
            f"{label:<14}{score.tried:>9}{score.killed:>8}{len(score.survivors):>10}{len(score.equivalent):>12}"
            f"{rate:>8.1%}{with_equivalent:>10.1%}"
        )
    for label in modules:
        score = found[label]
        if score.survivors:
            print(f"\nsurvivors in {label}:")
            for name in score.survivors:
                print(f"  {name}")
                if args.show:
                    shown = subprocess.run([str(MUTMUT), "show", name], cwd=ROOT, capture_output=True, text=True)
                    print("    " + shown.stdout.strip().replace("\n", "\n    "))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
