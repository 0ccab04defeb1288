"""Trait vectors: parsing, presets, stable error codes, and seeded sampling."""

from __future__ import annotations

import math

import pytest

from npcs.errors import BadTrait, NpcError, UnknownPreset
from npcs.traits import DIMENSIONS, NEUTRAL, PRESETS, TraitVector, preset, sample_traits


def test_parse__preset_dict_and_base_plus_overrides():
    assert TraitVector.parse("adversarial") is PRESETS["adversarial"]
    assert TraitVector.parse(None) == NEUTRAL
    assert TraitVector.parse({"chaos": 0.8}) == TraitVector(chaos=0.8)
    mixed = TraitVector.parse({"base": "cooperative", "verbosity": 0.1, "formality": 1})
    assert mixed.verbosity == 0.1 and mixed.formality == 1.0 and mixed.accuracy == PRESETS["cooperative"].accuracy
    assert isinstance(mixed.formality, float)
    same = TraitVector.parse(mixed)
    assert same is mixed


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ({"chaos": 1.5}, "chaos"),
        ({"accuracy": -0.1}, "accuracy"),
        ({"verbosity": True}, "verbosity"),
        ({"helpfulness": "high"}, "helpfulness"),
        ({"expertise": math.nan}, "expertise"),
        ({"charisma": 0.5}, "charisma"),
    ],
)
def test_parse__bad_trait_names_dimension_and_value(spec, needle):
    with pytest.raises(BadTrait) as err:
        TraitVector.parse(spec)
    assert err.value.code == "bad_trait"
    assert needle in str(err.value) and str(err.value).startswith("bad_trait: ")
    assert isinstance(err.value, NpcError)
    if needle == "chaos":
        assert "1.5" in str(err.value)


def test_parse__unknown_preset_named_alone_and_as_base():
    for spec in ("grumpy", {"base": "grumpy", "chaos": 0.1}):
        with pytest.raises(UnknownPreset) as err:
            TraitVector.parse(spec)
        assert err.value.code == "unknown_preset" and "'grumpy'" in str(err.value) and "cooperative" in str(err.value)


def test_construct__frozen_and_checked():
    v = TraitVector(chaos=0.3)
    with pytest.raises(AttributeError):
        v.chaos = 0.9  # type: ignore[misc]
    with pytest.raises(BadTrait):
        TraitVector(responsiveness=2)


def test_presets__shape():
    assert set(PRESETS) >= {"cooperative", "adversarial", "chaotic", "absent"}
    coop, adv, chaos, absent = (preset(n) for n in ("cooperative", "adversarial", "chaotic", "absent"))
    assert absent.absent and not any(p.absent for p in (coop, adv, chaos))
    assert coop.cooperativeness > 0.9 > 0.2 > adv.cooperativeness
    assert chaos.chaos == max(p.chaos for p in PRESETS.values())
    assert coop.accuracy > adv.accuracy > chaos.accuracy
    assert list(coop.as_dict()) == list(DIMENSIONS)


def test_sample_traits__deterministic_per_stream_and_centred():
    a = [sample_traits(11, e) for e in range(1, 301)]
    assert a == [sample_traits(11, e) for e in range(1, 301)]
    assert a != [sample_traits(12, e) for e in range(1, 301)]
    assert sample_traits(11, 5) == a[4]  # independent of what else was sampled
    for dim in DIMENSIONS:
        values = [getattr(v, dim) for v in a]
        assert all(0 <= x <= 1 for x in values)
        mean = sum(values) / len(values)
        assert abs(mean - getattr(NEUTRAL, dim)) < 0.05, dim
        assert len(set(values)) > 100  # actually varied
    assert not any(v.absent for v in a)
