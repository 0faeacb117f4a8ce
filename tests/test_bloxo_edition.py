"""Bloxo edition data (R-BLOXO-1) and the rotation convention (R-BLOXO-2)."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from engine.bloxo import NE, NW, SE, SW, CardKind, card_kind, load_edition, parse_edition, rotate
from engine.common import EditionError, load_edition_data


@pytest.fixture(scope="module")
def raw() -> dict:
    return load_edition_data("bloxo")


def test_default_edition_loads_with_40_cards_of_the_three_kinds():
    """R-BLOXO-1: 40 cards, each one colour, two side-by-side halves or four colours."""
    ed = load_edition()
    assert len(ed.cards) == 40
    assert len(set(ed.card_ids)) == 40
    kinds = Counter(c.kind for c in ed.cards)
    assert set(kinds) <= {CardKind.ONE, CardKind.HALVES, CardKind.FOUR}
    assert sum(kinds.values()) == 40
    assert [c.name for c in ed.colors] == ["pink", "yellow", "blue", "green"]
    assert {c.name: c.shape for c in ed.colors} == {
        "pink": "diamond", "yellow": "circle", "blue": "cross", "green": "star"}


def test_documented_composition_and_colour_balance():
    """The assumed composition of the edition note: 4 one-colour, 18 halves, 18 four-colour."""
    ed = load_edition()
    kinds = Counter(c.kind for c in ed.cards)
    assert kinds == {CardKind.ONE: 4, CardKind.HALVES: 18, CardKind.FOUR: 18}
    per_colour = Counter(q for c in ed.cards for q in c.quadrants)
    assert per_colour == {"pink": 40, "yellow": 40, "blue": 40, "green": 40}
    designs = Counter(c.design for c in ed.cards)
    assert len(designs) == 16  # every possible card face occurs


def test_rotation_is_clockwise_as_seen_from_above():
    """R-BLOXO-2: one clockwise quarter turn carries NW to NE, NE to SE, SE to SW, SW to NW."""
    card = ("pink", "yellow", "blue", "green")  # NW, NE, SE, SW
    once = rotate(card, 1)
    assert once[NE] == card[NW] and once[SE] == card[NE] and once[SW] == card[SE] and once[NW] == card[SW]
    assert rotate(card, 2) == ("blue", "green", "pink", "yellow")
    assert rotate(card, 3) == rotate(rotate(rotate(card, 1), 1), 1)
    assert rotate(card, 4) == card


def test_card_kind_rejects_diagonal_and_three_and_one():
    """R-BLOXO-1: never a diagonal pair or three-and-one."""
    assert card_kind(("green",) * 4) is CardKind.ONE
    assert card_kind(("pink", "pink", "green", "green")) is CardKind.HALVES
    assert card_kind(("pink", "green", "green", "pink")) is CardKind.HALVES
    assert card_kind(("pink", "yellow", "blue", "green")) is CardKind.FOUR
    assert card_kind(("pink", "green", "pink", "green")) is None
    assert card_kind(("pink", "pink", "pink", "green")) is None
    assert card_kind(("pink", "pink", "yellow", "green")) is None


def test_appearances_are_distinct_rotations():
    ed = load_edition()
    for c in ed.cards:
        looks = [a for _, a in c.appearances]
        assert len(looks) == len(set(looks)) == (1 if c.kind is CardKind.ONE else 4)
        assert all(ed.identify(a) == c.design for a in looks)
    assert ed.identify(("pink", "green", "pink", "green")) is None


def _broken(raw: dict, change) -> dict:
    data = copy.deepcopy(raw)
    change(data)
    return data


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["cards"].pop(), "40 cards"),
        (lambda d: d["cards"][5].update(quadrants=["pink", "purple", "pink", "pink"]), "unknown colour"),
        (lambda d: d["cards"][5].update(quadrants=["pink", "green", "pink", "green"]), "R-BLOXO-1"),
        (lambda d: d["cards"][5].update(quadrants=["pink", "pink", "pink", "green"]), "R-BLOXO-1"),
        (lambda d: d["cards"][5].update(quadrants=["pink", "pink"]), "4 colours"),
        (lambda d: d["cards"][5].update(id=d["cards"][4]["id"]), "appears twice"),
        (lambda d: d["cards"][5].update(kind="four"), "declared"),
        (lambda d: d["colors"][1].update(shape="diamond"), "own shape"),
        (lambda d: d["colors"].pop(), "exactly 4 colours"),
        (lambda d: d["colors"][1].update(name="pink"), "different"),
        (lambda d: d.update(game="blox"), "bloxo"),
        (lambda d: d["rules"]["setup_discards"].pop("4"), "R-BLOXO-7"),
        (lambda d: d["rules"].update(hand_size=0), "hand_size"),
    ],
)
def test_invalid_edition_is_rejected(raw, change, message):
    with pytest.raises(EditionError, match=message):
        parse_edition(_broken(raw, change))


def test_edition_from_path(tmp_path, raw):
    path = tmp_path / "ed.json"
    path.write_text(json.dumps(raw))
    assert load_edition(path).card_ids == load_edition().card_ids
    with pytest.raises(EditionError, match="not found"):
        load_edition(tmp_path / "missing.json")
