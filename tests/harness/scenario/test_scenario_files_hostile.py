"""Scenario files written to hurt: alias bombs, oversized, non-UTF-8, unreadable, special files. Each is refused at
load with one line naming the file (exit 2), in bounded time and memory, by the libyaml and the pure-Python loader
alike; ``bench check-scenarios`` never hangs on them. Also the bounds on steps and trials."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
import yaml

import harness.scenario.safe_yaml as safe_yaml
from harness.errors import ScenarioError, UserInputError
from harness.matrix.cell.cell_runner import cells_for
from harness.matrix.pipeline.spec import MAX_TRIALS, RunSpec
from harness.scenario.load import load_scenario
from harness.scenario.model import MAX_STEPS, MAX_TRANSITIONS
from tests.helpers.bench import SCENARIOS, bench_main
from tests.helpers.bench import bench_process as bench

BLOG = (SCENARIOS / "blog_brief_approval.yaml").read_text(encoding="utf-8")
CLAIM = (SCENARIOS / "insurance_claim.yaml").read_text(encoding="utf-8")
RETURNS = 'returns: {plate: "粤B12345", confidence: 0.91}'
ARGS = "    args:\n      type: object\n      properties:\n        topic: {type: string}"


def laughs(levels: int = 10, width: int = 10) -> str:
    """A flow mapping whose last entry expands to width**levels values while the text stays tiny."""
    parts = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    parts += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "{" + ", ".join(parts) + "}"


def merge_bomb(levels: int = 40) -> str:
    """Merge keys that double at each level: flattening them would build 2**levels key pairs."""
    parts = ["m0: &m0 {k: 1}"] + [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], z{i}: 1}}" for i in range(1, levels)]
    return "{" + ", ".join(parts) + "}"


BOMBS = {
    "laughs_in_args": ("blog_brief_approval", BLOG.replace(ARGS, f"    args: {laughs()}\n    x_{ARGS.strip()}", 1)),
    "laughs_in_returns": ("insurance_claim", CLAIM.replace(RETURNS, f"returns: {laughs()}", 1)),
    "merge_keys_in_returns": ("insurance_claim", CLAIM.replace(RETURNS, f"returns: {merge_bomb()}", 1)),
    "one_string_many_times": (
        "insurance_claim",
        CLAIM.replace(RETURNS, f"returns: {{a: &s {'x' * 400_000}, b: [{', '.join(['*s'] * 12)}]}}", 1),
    ),
    "recursive_alias": ("insurance_claim", CLAIM.replace(RETURNS, "returns: &r {self: *r}", 1)),
}


@pytest.fixture(params=["libyaml", "python"])
def loader(request, monkeypatch):
    """Every test runs with the C loader (the default when libyaml is there) and the pure-Python one."""
    if request.param == "libyaml":
        if not yaml.__with_libyaml__:
            pytest.skip("PyYAML was built without libyaml")
        assert safe_yaml.LOADER is not safe_yaml.PURE_LOADER
    else:
        monkeypatch.setattr(safe_yaml, "LOADER", safe_yaml.PURE_LOADER)
    return request.param


def refused(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    message = str(caught.value)
    assert "\n" not in message and path.name in message
    return message


@pytest.mark.parametrize("case", BOMBS)
def test_an_alias_bomb_is_refused_at_load_in_bounded_memory(tmp_path, loader, case):
    name, text = BOMBS[case]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    assert path.stat().st_size < safe_yaml.MAX_FILE_BYTES
    tracemalloc.start()
    try:
        message = refused(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "alias" in message or "expands" in message, message
    assert peak < 64 * 1024 * 1024, f"loading the refused file peaked at {peak} bytes"


@pytest.mark.slow
def test_the_library_scenarios_read_the_same_with_either_loader(loader):
    for path in sorted(SCENARIOS.glob("*.yaml")):
        assert safe_yaml.read_yaml(path, path.name) == yaml.safe_load(path.read_text(encoding="utf-8")), path


def test_aliases_within_the_bound_still_load(tmp_path, loader):
    text = BLOG.replace(
        ARGS, "    args: &brief_args\n      type: object\n      properties:\n        topic: {type: string}"
    )
    text = text.replace("        body: {type: string}", "        body: {type: string}\n        again: *brief_args")
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_text(text, encoding="utf-8")
    scenario = load_scenario(path)
    draft = scenario.action_map["write_draft"].args
    assert draft["properties"]["again"] == scenario.action_map["create_brief"].args


@pytest.mark.parametrize(
    ("value", "word"),
    [
        ("!!binary aGVsbG8=", "!!binary"),
        ("!!set {a, b}", "!!set"),
        ("!!python/object:os.system {}", "python/object"),
        ("!!timestamp 2024-01-01", "!!timestamp"),
        ("{1: one}", "not a string"),
        ("{yes: 1}", "not a string"),
        ("{a: 1, a: 2}", "given twice"),
        ("9" * 5000, "64 bits"),
        ("0x" + "f" * 40, "64 bits"),
        ("[" * 120 + "]" * 120, "deeper"),
    ],
    ids=[
        "binary",
        "set",
        "python_object",
        "timestamp",
        "int_key",
        "bool_key",
        "duplicate_key",
        "huge_int",
        "huge_hex",
        "deep",
    ],
)
def test_values_that_are_not_json_data_are_refused_with_their_line(tmp_path, loader, value, word):
    path = tmp_path / "insurance_claim.yaml"
    path.write_text(CLAIM.replace(RETURNS, f"returns: {{plate: x, extra: {value}}}", 1), encoding="utf-8")
    message = refused(path)
    assert word in message and "line 34" in message, message


def test_a_date_stays_the_text_it_was_written_as(tmp_path, loader):
    path = tmp_path / "insurance_claim.yaml"
    path.write_text(CLAIM.replace(RETURNS, "returns: {plate: x, seen: 2024-01-31}", 1), encoding="utf-8")
    assert load_scenario(path).action_map["read_plate"].returns == {"plate": "x", "seen": "2024-01-31"}


def test_a_file_over_the_size_bound_is_refused_unread(tmp_path, loader):
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_text(BLOG + "# " + "x" * safe_yaml.MAX_FILE_BYTES + "\n", encoding="utf-8")
    assert "larger than 1 MiB" in refused(path)


def test_a_file_just_under_the_size_bound_loads(tmp_path, loader):
    path = tmp_path / "blog_brief_approval.yaml"
    padding = safe_yaml.MAX_FILE_BYTES - len(BLOG.encode()) - 10
    path.write_text(BLOG + "# " + "x" * padding + "\n", encoding="utf-8")
    assert load_scenario(path).id == "blog_brief_approval"


def test_a_non_utf8_file_is_refused_naming_its_line(tmp_path, loader):
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_bytes(BLOG.replace("title: Blog post", "title: Blog \xe9post").encode("latin-1"))
    message = refused(path)
    assert "not UTF-8" in message and "line 4" in message, message


def test_a_utf16_file_is_refused_as_not_utf8(tmp_path, loader):
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_bytes(BLOG.encode("utf-16"))
    assert "not UTF-8" in refused(path)


def test_a_utf8_byte_order_mark_is_fine(tmp_path, loader):
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + BLOG.encode())
    assert load_scenario(path).id == "blog_brief_approval"


def special_files(folder: Path) -> dict[str, Path]:
    """Files named like scenarios that cannot be read as one: a FIFO (opening it could block), a folder, a link to
    nothing, a device."""
    found = {}
    fifo = folder / "fifo.yaml"
    os.mkfifo(fifo)
    found["fifo"] = fifo
    (folder / "folder.yaml").mkdir()
    found["folder"] = folder / "folder.yaml"
    (folder / "dangling.yaml").symlink_to(folder / "nowhere.yaml")
    found["dangling"] = folder / "dangling.yaml"
    (folder / "zero.yaml").symlink_to("/dev/zero")
    found["device"] = folder / "zero.yaml"
    return found


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling", "device"])
def test_special_files_are_refused_without_blocking(tmp_path, loader, kind):
    path = special_files(tmp_path)[kind]
    assert "cannot read" in refused(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_refused(tmp_path, loader):
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_text(BLOG, encoding="utf-8")
    path.chmod(0)
    assert "cannot read: Permission denied" in refused(path)


def test_a_file_that_fails_while_read_is_refused(tmp_path, loader):
    """A regular file whose read fails (EIO from /proc/self/mem at offset 0): the error, not a traceback."""
    path = tmp_path / "blog_brief_approval.yaml"
    path.symlink_to("/proc/self/mem")
    assert "cannot read" in refused(path)


CLI_CASES = {
    "alias_bomb": lambda folder: (folder / "insurance_claim.yaml").write_text(BOMBS["laughs_in_returns"][1]),
    "oversized": lambda folder: (folder / "blog_brief_approval.yaml").write_text(BLOG + "#" * (2 << 20)),
    "not_utf8": lambda folder: (folder / "blog_brief_approval.yaml").write_bytes(b"id: \xff\xfe\n"),
    "fifo": lambda folder: os.mkfifo(folder / "blog_brief_approval.yaml"),
    "folder": lambda folder: (folder / "blog_brief_approval.yaml").mkdir(),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", CLI_CASES)
@pytest.mark.parametrize("command", ["check-scenarios", "list", "run"])
def test_every_command_gives_one_line_and_exit_2_and_never_hangs(tmp_path, case, command):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    CLI_CASES[case](folder)
    out = tmp_path / "out"
    extra = ["--model", "scripted:eager", "--out", str(out)] if command == "run" else []
    done = bench(command, "--scenarios-dir", str(folder), *extra, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and ".yaml" in lines[0], done.stderr
    assert not out.exists()  # refused before a folder (and a manifest stuck at running) was made


def test_check_scenarios_on_a_folder_of_bombs_names_the_first_and_stops(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    for name, text in BOMBS.values():
        (folder / f"{name}.yaml").write_text(text)
    code, _, err = bench_main(monkeypatch, capsys, "check-scenarios", "--scenarios-dir", str(folder))
    assert code == 2 and len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------- bounds on steps and trials


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("max_steps: 4", "max_steps: 1000000000", "limits.max_steps"),
        ("max_steps: 4", f"max_steps: {MAX_STEPS + 1}", "limits.max_steps"),
        ("max_steps: 4", "max_steps: 4\n  max_transitions: 1000000000", "limits.max_transitions"),
        ("max_steps: 4", f"max_steps: 4\n  max_transitions: {MAX_TRANSITIONS + 1}", "limits.max_transitions"),
    ],
    ids=["steps_1e9", "steps_over", "transitions_1e9", "transitions_over"],
)
def test_step_and_transition_limits_have_an_upper_bound(tmp_path, old, new, field):
    assert old in BLOG
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_text(BLOG.replace(old, new, 1), encoding="utf-8")
    message = refused(path)
    assert f": {field}: " in message and "less than or equal" in message, message


def test_an_agent_node_has_the_same_step_bound(tmp_path):
    text = (SCENARIOS / "release_pipeline.yaml").read_text(encoding="utf-8")
    agent = "      type: agent\n"
    assert agent in text and "      max_steps: 4\n" in text.split(agent, 1)[1]
    path = tmp_path / "release_pipeline.yaml"
    path.write_text(text.replace("      max_steps: 4\n", "      max_steps: 1000000000\n", 1), encoding="utf-8")
    message = refused(path)
    assert "workflow.nodes[" in message and ".max_steps: " in message, message


def test_the_limits_at_their_bound_load(tmp_path):
    path = tmp_path / "blog_brief_approval.yaml"
    path.write_text(
        BLOG.replace("max_steps: 4", f"max_steps: {MAX_STEPS}\n  max_transitions: {MAX_TRANSITIONS}", 1),
        encoding="utf-8",
    )
    limits = load_scenario(path).limits
    assert (limits.max_steps, limits.max_transitions) == (MAX_STEPS, MAX_TRANSITIONS)


@pytest.mark.parametrize("trials", [MAX_TRIALS + 1, 1_000_000_000, 0, -3])
def test_trials_out_of_bounds_are_one_line(trials, monkeypatch, capsys):
    with pytest.raises(UserInputError, match="--trials"):
        RunSpec.build(model="scripted:eager", trials=trials)
    code, _, err = bench_main(monkeypatch, capsys, "run", "--model", "scripted:eager", "--trials", str(trials))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--trials" in err, err


def test_cells_are_generated_lazily(blog):
    """A matrix at the trials bound costs nothing until a cell is pulled."""
    tracemalloc.start()
    try:
        cells = cells_for(
            [blog] * 8, ["react", "workflow", "plan_execute", "plan_validated", "react_guarded"], MAX_TRIALS
        )
        first = [next(cells) for _ in range(3)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [c.trial for c in first] == [1, 2, 3]
    assert peak < 1024 * 1024
