"""Whether run folders were made from the same texts and code: one warning line for each provenance fact
(bench's version and commit, a scenario file, the prompt templates, a key library's version) on which they
differ. ``bench compare`` compares its two sides, ``bench report`` its folders (docs/development.md:
reproducibility)."""

from __future__ import annotations

from collections.abc import Sequence

from reports.load import clean_text
from reports.manifests import RunInfo

SHOWN_SIDES = 4  # a report of many folders names this many values, then counts the rest
NOT_LIBRARIES = ("bench", "platform")  # bench's own line comes first; the platform differs between any two machines

Side = tuple[str, Sequence[RunInfo]]  # a name ("A", a folder) and the manifests read for it


def provenance_warnings(sides: Sequence[Side]) -> list[str]:
    """One line per fact on which the sides' manifests differ, naming each side's value; a fact a side's manifest
    does not record is not compared for that side, and a side without the hashes is named once."""
    facts = [(name, [_facts(info) for info in infos]) for name, infos in sides]
    lines = []
    for fact in _fact_order(facts):
        values = [(name, sorted({f[fact] for f in found if fact in f})) for name, found in facts]
        known = [(name, held) for name, held in values if held]
        if len({value for _, held in known for value in held}) > 1:
            lines.append(f"{fact} differs: {_listing(known)} ({_why(fact)})")
    read = [(name, [i for i in infos if i.problem is None]) for name, infos in sides]  # a broken one is warned of
    hashed = [(name, any(i.scenario_hashes or i.prompt_hash for i in infos)) for name, infos in read if infos]
    if any(has for _, has in hashed):  # some side kept the hashes: one without them cannot be checked
        lines += [
            f"{clean_text(name)}: its manifest has no scenario or prompt hashes (written before bench kept them): "
            "a changed scenario file or prompt cannot be detected"
            for name, has in hashed
            if not has
        ]
    return lines


def _facts(info: RunInfo) -> dict[str, str]:
    """A manifest's provenance as fact name -> value."""
    found = {}
    if "bench" in info.versions:
        found["bench version"] = info.versions["bench"]
    if info.bench_commit:
        found["bench commit"] = info.bench_commit
    if info.prompt_hash:
        found["prompt hash (modes/)"] = info.prompt_hash
    for scenario, digest in info.scenario_hashes.items():
        found[f"scenario file {scenario}"] = digest
    for library, version in info.versions.items():
        if library not in NOT_LIBRARIES:
            found[f"{library} version"] = version
    return found


def _fact_order(facts: Sequence[tuple[str, list[dict[str, str]]]]) -> list[str]:
    """bench first, then the prompts, the scenario files and the libraries, each by name."""
    names = {fact for _, found in facts for f in found for fact in f}
    rank = {"bench version": 0, "bench commit": 1, "prompt hash (modes/)": 2}
    return sorted(names, key=lambda n: (rank.get(n, 3 if n.startswith("scenario file ") else 4), n))


def _listing(known: list[tuple[str, list[str]]]) -> str:
    shown = [f"{clean_text(name)} {', '.join(clean_text(v, 60) for v in held)}" for name, held in known[:SHOWN_SIDES]]
    more = f"; and {len(known) - SHOWN_SIDES} more" if len(known) > SHOWN_SIDES else ""
    return "; ".join(shown) + more


def _why(fact: str) -> str:
    if fact.startswith("scenario file "):
        return "the story changed: its numbers are not comparable"
    if fact == "prompt hash (modes/)":
        return "the modes' prompts or code changed"
    if fact.startswith("bench "):
        return "parsing, judging or prompts may differ"
    return "a library that shapes every run"
