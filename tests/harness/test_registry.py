"""The one registry type: a duplicate name is refused, an unknown name lists the known ones on one line, sorted, and
every listing keeps registration order; each extension kind is such a registry."""

from __future__ import annotations

import pytest

from harness.core.approvals import SCRIPTED_APPROVERS
from harness.errors import UnknownNameError, UserInputError
from harness.models.choice import MODEL_SOURCES
from harness.models.providers import PROFILES
from harness.models.scripted import POLICIES
from harness.registry import Registry
from modes import MODES


def test_register_adds_the_decorated_class_unchanged_and_names_it():
    animals: Registry[type] = Registry("animal", named=True)

    @animals.register("cat")
    class Cat:
        """Sleeps a lot."""

    assert animals["cat"] is Cat and Cat.name == "cat"  # type: ignore[attr-defined]
    assert animals.describe() == [("cat", "Sleeps a lot.")]


def test_the_description_is_the_docstring_s_first_sentence_whole():
    helpers: Registry[object] = Registry("helper")

    @helpers.register("wrapped")
    def wrapped() -> None:
        """Reads the plan: approves one with nothing unsafe in it,
        rejects the rest. Then more."""

    assert helpers.describe() == [
        ("wrapped", "Reads the plan: approves one with nothing unsafe in it, rejects the rest.")
    ]


def test_a_name_registered_twice_is_refused_and_the_first_stays():
    things: Registry[int] = Registry("thing")
    things.add("one", 1)
    with pytest.raises(ValueError, match="thing 'one' registered twice"):
        things.add("one", 2)
    assert things["one"] == 1


def test_an_unknown_name_is_a_user_error_listing_the_known_ones_sorted_on_one_line():
    things: Registry[int] = Registry("thing")
    for name in ("zeta", "alpha", "mid"):
        things.add(name, 0)
    with pytest.raises(UnknownNameError) as caught:
        things["nope"]
    assert isinstance(caught.value, UserInputError)
    assert str(caught.value) == "unknown thing 'nope'; known: alpha, mid, zeta"
    assert str(things.unknown("x", also=("auto",))) == "unknown thing 'x'; known: alpha, auto, mid, zeta"


def test_names_iteration_and_description_keep_registration_order():
    things: Registry[int] = Registry("thing", summary=lambda n: f"number {n}")
    for number, name in enumerate(("zeta", "alpha", "mid")):
        things.add(name, number)
    assert things.names() == ("zeta", "alpha", "mid") == tuple(things)
    assert things.describe() == [("zeta", "number 0"), ("alpha", "number 1"), ("mid", "number 2")]
    assert things.get("nope") is None and things.get("nope", 7) == 7 and "mid" in things and "nope" not in things


def test_a_removed_name_is_unknown_again():
    things: Registry[int] = Registry("thing")
    things.add("one", 1)
    things.remove("one")
    things.remove("never")  # ignored
    assert "one" not in things and len(things) == 0


@pytest.mark.parametrize(
    "registry, kind",
    [
        (MODES, "mode"),
        (MODEL_SOURCES, "model source"),
        (POLICIES, "scripted policy"),
        (SCRIPTED_APPROVERS, "scripted approver"),
        (PROFILES, "provider"),
    ],
)
def test_every_extension_kind_is_one_registry_that_describes_each_plug_in(registry, kind):
    assert isinstance(registry, Registry) and registry.kind == kind
    rows = registry.describe()
    assert [name for name, _ in rows] == list(registry.names()) and rows
    assert all(summary.strip() for _, summary in rows), [name for name, summary in rows if not summary.strip()]


def test_bench_list_lists_every_other_kind_s_names_in_one_table():
    from harness.matrix.commands.catalog import extension_rows, registries

    rows = extension_rows()
    for registry in registries():
        assert [(name, summary) for kind, name, summary in rows if kind == registry.kind] == registry.describe()
    assert {MODEL_SOURCES.kind, POLICIES.kind, SCRIPTED_APPROVERS.kind, PROFILES.kind} <= {kind for kind, _, _ in rows}
