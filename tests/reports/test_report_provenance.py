"""``bench compare`` and ``bench report`` warn, one line per fact, when folders were made from different bench
versions or commits, scenario files, prompts or key libraries; an old manifest is named once, never guessed at."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reports.manifests import read_run_info
from reports.provenance import provenance_warnings
from tests.helpers.bench import bench_main
from tests.helpers.report_fixtures import Run, write_runs

PROVENANCE: dict[str, Any] = {
    "versions": {"bench": "0.1.0", "python": "3.11.7", "platform": "Linux-a", "pydantic": "2.14.4"},
    "bench_commit": "a" * 40,
    "scenario_hashes": {"blog_brief_approval": "111111111111", "refund_amount": "222222222222"},
    "prompt_hash": "333333333333",
}


def folder(tmp_path: Path, name: str, prefix: str, **changes: Any) -> Path:
    """A run folder with two react runs and a manifest holding PROVENANCE with ``changes`` applied."""
    where = write_runs(tmp_path / name, [Run(f"{prefix}{i}", "react", trial=i) for i in (1, 2)])
    manifest = {"status": "complete", "model": "fixture:model", "model_source": "scripted", **PROVENANCE, **changes}
    (where / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return where


def warnings_of(err: str) -> list[str]:
    return [line.removeprefix("warning: ") for line in err.splitlines() if line.startswith("warning: ")]


def test_folders_made_alike_raise_no_provenance_warning_even_on_different_machines(tmp_path, monkeypatch, capsys):
    a = folder(tmp_path, "a", "a")
    b = folder(tmp_path, "b", "b", versions={**PROVENANCE["versions"], "platform": "Darwin-b"})
    code, _out, err = bench_main(monkeypatch, capsys, "compare", str(a), str(b))
    assert code == 0
    assert warnings_of(err) == []


def test_compare_warns_once_per_differing_fact_naming_both_values(tmp_path, monkeypatch, capsys):
    a = folder(tmp_path, "a", "a")
    b = folder(
        tmp_path,
        "b",
        "b",
        versions={**PROVENANCE["versions"], "bench": "0.2.0", "pydantic": "2.15.0"},
        bench_commit="b" * 40 + "-dirty",
        scenario_hashes={**PROVENANCE["scenario_hashes"], "refund_amount": "444444444444"},
        prompt_hash="555555555555",
    )
    _code, _out, err = bench_main(monkeypatch, capsys, "compare", str(a), str(b))
    assert warnings_of(err) == [
        "bench version differs: A 0.1.0; B 0.2.0 (parsing, judging or prompts may differ)",
        f"bench commit differs: A {'a' * 40}; B {'b' * 40}-dirty (parsing, judging or prompts may differ)",
        "prompt hash (modes/) differs: A 333333333333; B 555555555555 (the modes' prompts or code changed)",
        "scenario file refund_amount differs: A 222222222222; B 444444444444 "
        "(the story changed: its numbers are not comparable)",
        "pydantic version differs: A 2.14.4; B 2.15.0 (a library that shapes every run)",
    ]


def test_a_side_whose_manifest_predates_provenance_is_named_not_compared(tmp_path, monkeypatch, capsys):
    a = folder(tmp_path, "a", "a")
    b = folder(tmp_path, "b", "b")
    old = json.loads((b / "manifest.json").read_text())
    for key in ("bench_commit", "scenario_hashes", "prompt_hash", "versions"):
        del old[key]
    (b / "manifest.json").write_text(json.dumps(old))
    _code, _out, err = bench_main(monkeypatch, capsys, "compare", str(a), str(b))
    assert warnings_of(err) == [
        "B: its manifest has no scenario or prompt hashes (written before bench kept them): a changed scenario "
        "file or prompt cannot be detected"
    ]


@pytest.mark.slow
def test_report_of_several_folders_warns_on_a_changed_scenario_file_in_terminal_and_markdown(
    tmp_path, monkeypatch, capsys
):
    a = folder(tmp_path, "a", "a")
    b = folder(tmp_path, "b", "b", scenario_hashes={"blog_brief_approval": "999999999999"})
    out = tmp_path / "report"
    code, _out, err = bench_main(monkeypatch, capsys, "report", str(a), str(b), "--out", str(out), "--format", "md")
    assert code == 0, err
    expected = f"scenario file blog_brief_approval differs: {a} 111111111111; {b} 999999999999"
    assert [w for w in warnings_of(err) if "scenario file" in w] == [
        f"{expected} (the story changed: its numbers are not comparable)"
    ]
    assert expected in (out / "report.md").read_text(encoding="utf-8")


def test_hostile_values_in_a_manifest_stay_on_one_line(tmp_path):
    a = folder(tmp_path, "a", "a")
    b = folder(tmp_path, "b", "b", prompt_hash="x\nwarning: forged\x1b[2J")
    info_a, info_b = read_run_info(a), read_run_info(b)
    assert info_a is not None and info_b is not None
    lines = provenance_warnings([("A", [info_a]), ("B", [info_b])])
    assert len(lines) == 1 and "\n" not in lines[0] and "\x1b" not in lines[0]
