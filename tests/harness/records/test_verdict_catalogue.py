"""The stop verdicts' one catalogue: every verdict of the trace's Literal has its entry, in the Literal's order, with
a label, a meaning and a colour of the palette, and every output reads its words and colours from there."""

from __future__ import annotations

from typing import get_args

from harness.records.timeline import Ending
from harness.records.trace import StopVerdict
from harness.records.verdicts import CATALOGUE, GLOSSARY, JUDGED_VERDICTS, label, meaning
from reports import palette
from reports.run_page import STYLE
from reports.tables import VERDICTS_COLUMNS


def test_every_verdict_of_the_literal_has_one_entry_in_its_order():
    assert tuple(CATALOGUE) == get_args(StopVerdict)
    assert all(name == entry.name for name, entry in CATALOGUE.items())


def test_every_verdict_has_a_label_a_meaning_and_a_palette_colour():
    for name, entry in CATALOGUE.items():
        assert entry.label.strip() and entry.meaning.strip(), name
        assert entry.colour in palette.SWATCHES, f"{name}: colour key '{entry.colour}' is not in reports/palette.py"
        assert palette.VERDICTS[name] == palette.SWATCHES[entry.colour]
        assert palette.MEANINGS[f"verdict {name}"] == palette.VERDICTS[name]


def test_only_infrastructure_is_unjudged():
    assert [name for name, entry in CATALOGUE.items() if not entry.judged] == ["infrastructure"]


def test_the_run_pages_border_each_verdict_in_its_palette_colour():
    for name, colour in palette.VERDICTS.items():
        assert f'.verdict[data-verdict="{name}"] {{ border-color: {colour}; }}' in STYLE


def test_tables_and_timelines_take_the_catalogues_words():
    headers = [column.header for column in VERDICTS_COLUMNS]
    assert all(label(name) in headers and f"{label(name)} %" in headers for name in JUDGED_VERDICTS)
    narrow = {column.header for column in VERDICTS_COLUMNS if column.narrow}
    assert {label(name) for name in JUDGED_VERDICTS} <= narrow  # every count: a narrow row adds up to its n
    assert all(CATALOGUE[name].label in GLOSSARY for name in JUDGED_VERDICTS)
    ending = Ending("finished", None, "finished", "late", False, False, (), ())
    assert ending.verdict_meaning == meaning("late") == CATALOGUE["late"].meaning


def test_a_verdict_the_catalogue_does_not_know_shows_as_written():
    assert label("from_the_future") == "from_the_future" and meaning("from_the_future") == ""
