"""bench's scenario commands: list, check-scenarios, show-scenario, schema, and gate-check (a story's release gate)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.common import ScenariosDir, echo, table
from harness.terminal import printable


def list_command(scenarios_dir: ScenariosDir = None) -> None:
    """List the control modes (who decides the next step, who can stop a run) and the scenarios.

    Then every other registered name: model sources, scripted policies, scripted approvers, provider profiles.
    """
    from harness.matrix.commands.catalog import catalog

    found = catalog(scenarios_dir)
    echo(
        table(
            found.modes,
            headers=["mode", "what it does", "who decides the next step", "who can really stop the run"],
        )
    )
    if found.runtimes:
        echo("\nruntime adapters: modes run by a real agent framework (--mode runtimes; docs/runtimes.md)")
        echo(table(found.runtimes, headers=["mode", "what it does", "framework", "installed"]))
    echo()
    echo(table(found.scenarios, headers=["scenario", "title", "correct stop"]))
    echo("\nextension points: the other registered names (docs/extending.md)")
    echo(table(found.extensions, headers=["kind", "name", "what it is"]))


def check_scenarios_command(
    scenarios_dir: ScenariosDir = None,
    suggest: Annotated[
        str | None,
        typer.Option(
            "--suggest",
            metavar="MODE",
            help="Print MODE's sanity rows, computed (scripted:eager's verdicts), as YAML to review and paste.",
        ),
    ] = None,
) -> None:
    """Sanity-check every scenario: its reference path meets its oracle; scripted:eager fares as declared.

    A mode with no sanity row for a scenario is noted as not covered there, not failed.
    """
    from harness.matrix.commands.catalog import check_scenarios, suggest_sanity_rows
    from harness.matrix.commands.sanity import coverage_notes

    if suggest is not None:
        echo(suggest_sanity_rows(suggest, scenarios_dir), nl=False)
        return
    reports = check_scenarios(scenarios_dir)
    rows = [
        [
            r.scenario,
            r.reference.suspended_at or r.reference.status,
            f"{sum(e.met for e in r.expectations)}/{len(r.expectations)}",
            "ok" if r.passed else "FAILED",
        ]
        for r in reports
    ]
    echo(table(rows, headers=["scenario", "reference stops at", "eager verdicts met", "sanity"]))
    for note in coverage_notes(reports):
        echo(note)
    for report in reports:
        for problem in report.problems:
            echo(f"{report.scenario}: {problem}", err=True)
    if not all(report.passed for report in reports):
        raise typer.Exit(1)


def show_scenario_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="The scenario's name.", show_default=False)],
    mermaid: Annotated[
        bool, typer.Option("--mermaid", help="Print its workflow as a Mermaid flowchart (for a ```mermaid block).")
    ] = False,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Show one scenario: its rules and oracle, or with --mermaid its workflow graph as Mermaid text."""
    from harness.matrix.pipeline.spec import project_dirs
    from harness.scenario.load import select_scenarios
    from harness.scenario.mermaid import mermaid as mermaid_text
    from harness.scenario.story_text import oracle_rows, rule_rows

    (scenario,) = select_scenarios(project_dirs(scenarios_dir)[0], [name])
    if mermaid:
        echo(mermaid_text(scenario), nl=False, fit=False)
        return
    echo(f"{scenario.id}: {scenario.title}")
    for title, rows in (("rules", rule_rows(scenario)), ("oracle", oracle_rows(scenario))):
        echo(f"\n{title}")
        for row_name, value in rows:
            echo(f"  {row_name}: {' '.join(value.split())}")
    echo(f"\nworkflow: bench show-scenario {scenario.id} --mermaid")


def schema_command() -> None:
    """Print the scenario format as JSON Schema (the shipped scenarios/schema/scenario.schema.json)."""
    from harness.matrix.commands.catalog import scenario_schema_text

    echo(scenario_schema_text(), nl=False, fit=False)


def gate_check_command(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="The story whose workflow is checked.")],
    inject: Annotated[
        str,
        typer.Option(
            "--inject",
            metavar="NODE=ERROR",
            help="The workflow node whose action fails on every call, and the error (a bare code: HTTP CODE).",
        ),
    ],
    sample: Annotated[int, typer.Option(min=1, help="Gateway records the log audit samples.")] = 20,
    seed: Annotated[int, typer.Option(help="Seeds the run and the audit's sample.")] = 0,
    mode: Annotated[str, typer.Option(metavar="NAME", help="The workflow mode that walks the story.")] = "workflow",
    out: Annotated[Path | None, typer.Option(metavar="DIR", help="The run folder (default: a new one).")] = None,
    scenarios_dir: ScenariosDir = None,
) -> None:
    """Seed 003's release gate: inject an error into one workflow step, check the step took its declared
    on_failure route, and audit a sample of the run's gateway records (both hashes present and recomputed).

    Exit 0 when every check holds, 1 with a line per failed check (docs/scenarios.md: the release gate).
    """
    from harness.matrix.commands.release_gate import Injection, gate_check

    report = gate_check(
        scenario, Injection.parse(inject), mode=mode, sample=sample, seed=seed, out=out, scenarios_dir=scenarios_dir
    )
    for check in report.checks:
        echo(printable(check.line(), one_line=True))
    echo(f"run folder: {report.folder}")
    if not report.passed:
        failed = sum(not check.passed for check in report.checks)
        echo(f"release gate failed: {failed} check(s)", err=True)
        raise typer.Exit(1)
