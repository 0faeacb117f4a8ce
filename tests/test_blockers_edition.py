"""Blockers! edition data (R-BLOCKERS-1, R-BLOCKERS-2): loading and validation."""

from __future__ import annotations

import json

import pytest

from engine.blockers import BlockersEdition, load_edition
from engine.common import EditionError, load_edition_data


@pytest.fixture(scope="module")
def edition() -> BlockersEdition:
    return load_edition()


def test_default_edition_board_and_tiles_r_blockers_1(edition: BlockersEdition) -> None:
    assert edition.rows == tuple("ABCDEFGHI")
    assert edition.columns == tuple("123456789")
    assert edition.colors == ("red", "green", "blue", "yellow", "violet")
    assert len(edition.faces) == len(set(edition.faces)) == 28
    assert len(edition.symbols) == 9
    assert edition.wild in edition.faces


def test_crescent_is_the_near_left_section_r_blockers_1(edition: BlockersEdition) -> None:
    crescent = {edition.space_name(i) for i in edition.targets["crescent"]}
    assert crescent == {f"{r}{c}" for r in "GHI" for c in "123"}


def test_every_section_is_3x3_and_distinct_r_blockers_1(edition: BlockersEdition) -> None:
    covered: set[int] = set()
    for symbol in edition.symbols:
        spaces = edition.targets[symbol]
        rows = {s // 9 for s in spaces}
        cols = {s % 9 for s in spaces}
        assert len(spaces) == 9 and len(rows) == 3 and len(cols) == 3
        assert min(rows) % 3 == 0 and min(cols) % 3 == 0
        covered |= set(spaces)
    assert covered == set(range(81))


def test_placement_targets_r_blockers_2(edition: BlockersEdition) -> None:
    assert {edition.space_name(i) for i in edition.targets["E"]} == {f"E{c}" for c in "123456789"}
    assert {edition.space_name(i) for i in edition.targets["7"]} == {f"{r}7" for r in "ABCDEFGHI"}
    assert edition.targets["wild"] == tuple(range(81))
    for i in range(81):
        fits = [f for f in edition.faces if edition.allows(f, i)]
        assert sorted(fits) == sorted(edition.faces_for_space(i))
        assert len(fits) == 4


def test_space_names_round_trip(edition: BlockersEdition) -> None:
    for i in range(81):
        assert edition.space_index(edition.space_name(i)) == i
    assert edition.space_name(0) == "A1" and edition.space_name(80) == "I9"
    with pytest.raises(ValueError):
        edition.space_index("J1")
    with pytest.raises(ValueError):
        edition.space_index("A0")


def _data() -> dict:
    return load_edition_data("blockers")


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d["sections"][2].__setitem__(0, "moon"), "crescent"),
        (lambda d: d["sections"][0].__setitem__(1, "star"), "distinct"),
        (lambda d: d["sections"][0].__setitem__(1, "A"), "differ"),
        (lambda d: d["sections"][0].__setitem__(1, "wild"), "differ"),
        (lambda d: d["colors"].pop(), "five colours"),
        (lambda d: d["colors"].__setitem__(1, "red"), "distinct"),
        (lambda d: d.__setitem__("tiles_per_color", 27), "28"),
        (lambda d: d["rows"].pop(), "9 labels"),
        (lambda d: d["columns"].reverse(), "1..9"),
        (lambda d: d["sections"].pop(), "3 rows of 3"),
        (lambda d: d.pop("colors"), "missing"),
        (lambda d: d.__setitem__("rack_size", 40), "rack_size"),
    ],
)
def test_invalid_editions_are_rejected(change, words: str, tmp_path) -> None:
    data = _data()
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(EditionError, match=words):
        load_edition(path)


def test_unparseable_edition_file(tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(EditionError):
        load_edition(path)
    with pytest.raises(EditionError):
        load_edition(tmp_path / "missing.json")


def test_renamed_symbols_are_data(tmp_path) -> None:
    data = _data()
    data["sections"][1][1] = "spiral"
    path = tmp_path / "e.json"
    path.write_text(json.dumps(data))
    e = load_edition(path)
    assert "spiral" in e.faces and "flower" not in e.faces
    assert e.space_symbol[e.space_index("E5")] == "spiral"
