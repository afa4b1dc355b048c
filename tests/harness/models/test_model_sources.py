"""Model sources and scripted policies are registered like modes: one decorated class adds one, ``choose`` and
--help find it by name, and an unknown --model lists every registered kind."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.core.model_port import ModelRequest
from harness.errors import UserInputError
from harness.models.choice import (
    MODEL_SOURCES,
    ModelChoice,
    OpenSource,
    SourceKind,
    SourceSetup,
    choose,
    model_choices,
    model_label,
    model_source,
    open_source,
)
from harness.models.config import LiveOptions
from harness.models.scripted import POLICIES, Compliant, Proposal, ScriptedSource, scripted_policy
from harness.registry import Registry
from tests.helpers.registries import restored


@pytest.fixture
def sources() -> Iterator[Registry]:
    with restored(MODEL_SOURCES) as registry:
        yield registry


@pytest.fixture
def policies() -> Iterator[Registry]:
    with restored(POLICIES) as registry:
        yield registry


@pytest.mark.parametrize(
    "value, expected, manifest_kind",
    [
        ("scripted:eager", ModelChoice("scripted", name="eager"), "scripted"),
        ("live", ModelChoice("live"), "live"),
        ("local", ModelChoice("local"), "live"),  # the bundled model is a live source in the manifest
    ],
)
def test_each_kind_reads_its_own_values(value, expected, manifest_kind):
    choice = choose(value)
    assert choice == expected and choice.describe() == value and choice.recorded_as == manifest_kind


def test_only_the_live_endpoint_needs_the_environment():
    assert [name for name, kind in MODEL_SOURCES.items() if kind.needs_endpoint] == ["live"]
    assert [name for name, kind in MODEL_SOURCES.items() if kind.live] == ["live", "local"]


@pytest.mark.parametrize("value", ["scripted", "scripted:", "live:", "local:x", "local:", "gpt-4o", "replay"])
def test_a_value_not_written_a_kinds_way_lists_every_kind(value):
    with pytest.raises(UserInputError) as caught:
        choose(value)
    message = str(caught.value)
    assert message.startswith(f"--model {value}: unknown model; choose ") and "\n" not in message
    assert model_choices() in message


class Canned(SourceKind):
    """A throwaway kind for the test: ``canned:NAME`` answers like the compliant policy."""

    argument = "NAME"
    recorded_as = "scripted"

    def usage(self) -> str:
        return "canned:NAME (test answers)"

    def parse(self, value: str, argument: str) -> ModelChoice:
        return ModelChoice(self.name, name=argument)

    def label(self, choice: ModelChoice, endpoint: object) -> str:
        return f"canned:{choice.name}"

    @contextmanager
    def open(self, choice: ModelChoice, setup: SourceSetup) -> Iterator[OpenSource]:
        yield OpenSource(ScriptedSource("compliant"), self.recorded_as)


def test_one_registered_class_adds_a_model_source(sources, tmp_path):
    model_source("canned")(Canned)
    choice = choose("canned:lunch")
    assert choice == ModelChoice("canned", name="lunch") and choice.describe() == "canned"
    assert model_label(choice, None) == "canned:lunch"
    assert model_choices().endswith(" or canned:NAME (test answers)")
    options = LiveOptions()
    with open_source(choice, endpoint=None, options=options, concurrency=1, run_folder=tmp_path) as opened:
        assert isinstance(opened.source, ScriptedSource) and opened.kind == "scripted"


def test_a_source_name_registered_twice_is_refused(sources):
    with pytest.raises(ValueError, match="'scripted' registered twice"):
        model_source("scripted")(Canned)


def test_one_decorated_class_adds_a_scripted_policy(policies):
    @scripted_policy("stubborn")
    class Stubborn(Compliant):
        """Follows the compliant policy under another name."""

        def content(self, request: ModelRequest) -> Proposal:
            return super().content(request)

    assert Stubborn.name == "stubborn" and policies["stubborn"] is Stubborn
    assert choose("scripted:stubborn") == ModelChoice("scripted", name="stubborn")
    assert "|stubborn" in model_choices()
    model = ScriptedSource("stubborn").for_run(3)
    assert model.label == "scripted:stubborn" and isinstance(model.policy, Stubborn)


def test_a_policy_name_registered_twice_is_refused(policies):
    with pytest.raises(ValueError, match="'eager' registered twice"):
        scripted_policy("eager")(Compliant)


def test_the_scripted_policies_are_registered_in_their_documented_order():
    assert list(POLICIES) == ["compliant", "eager", "looping", "random", "reference"]
    assert all(cls.name == name for name, cls in POLICIES.items())
    assert POLICIES["random"](random.Random(0)).name == "random"


def test_a_replay_reads_its_folder_once_and_names_it_again(tmp_path):
    with pytest.raises(UserInputError, match=r"no recording\.jsonl there"):
        choose(f"replay:{tmp_path}")
    (tmp_path / "recording.jsonl").write_text("")
    choice = choose(f"replay:{tmp_path}")
    assert choice == ModelChoice("replay", folder=Path(tmp_path)) and choice.describe() == f"replay:{tmp_path}"
