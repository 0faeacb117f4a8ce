"""Bloxx! edition data (R-BLOXX-1) and shape orientations (R-BLOXX-2)."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest

from engine.bloxx import ORIENTATIONS, BloxxEdition, is_connected, load_edition, orient
from engine.common import EditionError


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads(resources.files("engine.editions").joinpath("bloxx.json").read_text("utf-8"))


def test_default_edition_matches_r_bloxx_1(raw):
    ed = load_edition()
    assert (ed.columns, ed.rows) == (7, 10)
    values = {v for row in ed.numbers for v in row if v}
    assert values and values <= {2, 3, 4}
    assert len(ed.coloured_rows) == 4
    assert len({c for c, _ in ed.coloured_rows}) == 4
    assert len(ed.dice) == 2
    for die in ed.dice:
        assert len(die.faces) == 6
        for face in die.faces:
            assert is_connected(face.cells)
            assert face.circle in face.cells


def test_edition_json_round_trip(raw, tmp_path):
    ed = load_edition()
    assert ed.to_json() == raw
    path = tmp_path / "copy.json"
    path.write_text(json.dumps(ed.to_json()))
    again = load_edition(path)
    assert again == ed
    assert again.to_json() == raw


def mutated(raw: dict, change) -> dict:
    data = copy.deepcopy(raw)
    change(data)
    return data


def face0(data: dict) -> dict:
    return data["dice"][0]["faces"][0]


BAD = {
    "wrong game": lambda d: d.update(game="blox"),
    "sheet too wide": lambda d: d["sheet"].update(columns=8),
    "number 5": lambda d: d["sheet"]["numbers"].__setitem__(0, "5......"),
    "number 1": lambda d: d["sheet"]["numbers"].__setitem__(0, "1......"),
    "short numbers row": lambda d: d["sheet"]["numbers"].__setitem__(0, "......"),
    "three coloured rows": lambda d: d["sheet"]["coloured_rows"].pop(),
    "coloured row off sheet": lambda d: d["sheet"]["coloured_rows"][0].update(row=10),
    "same row twice": lambda d: d["sheet"]["coloured_rows"][0].update(row=3),
    "same colour twice": lambda d: d["sheet"]["coloured_rows"][0].update(colour="blue"),
    "colour not a name": lambda d: d["sheet"]["coloured_rows"][0].update(colour="#ff8800"),
    "one die": lambda d: d["dice"].pop(),
    "five faces": lambda d: d["dice"][0]["faces"].pop(),
    "dice share a name": lambda d: d["dice"][1].update(name="white"),
    "faces share a name": lambda d: d["dice"][1]["faces"][0].update(name="w1"),
    "disconnected face": lambda d: face0(d).update(cells=[[0, 0], [1, 1]]),
    "diagonal only": lambda d: face0(d).update(cells=[[0, 0], [1, 1], [2, 2]]),
    "no circle": lambda d: face0(d).pop("circle"),
    "circle off the shape": lambda d: face0(d).update(circle=[5, 5]),
    "two circles": lambda d: face0(d).update(circles=[[0, 0], [0, 1]]),
    "circle not a cell": lambda d: face0(d).update(circle=[0]),
    "empty face": lambda d: face0(d).update(cells=[], circle=[0, 0]),
    "seven squares": lambda d: face0(d).update(cells=[[0, c] for c in range(7)]),
    "repeated cell": lambda d: face0(d).update(cells=[[0, 0], [0, 0], [0, 1]]),
    "negative cell": lambda d: face0(d).update(cells=[[0, -1], [0, 0]], circle=[0, 0]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_invalid_editions_are_rejected(raw, case):
    with pytest.raises(EditionError):
        BloxxEdition.from_json(mutated(raw, BAD[case]))


def test_unknown_file_is_an_edition_error(tmp_path):
    with pytest.raises(EditionError):
        load_edition(tmp_path / "missing.json")


def brute_force_shapes(face) -> set:
    """Every (cells, circle) a face can show, from the 8 symmetries written out."""
    maps = [
        lambda r, c: (r, c), lambda r, c: (c, -r), lambda r, c: (-r, -c), lambda r, c: (-c, r),
        lambda r, c: (r, -c), lambda r, c: (-c, -r), lambda r, c: (-r, c), lambda r, c: (c, r),
    ]
    out = set()
    for m in maps:
        moved = [m(*x) for x in face.cells]
        r0, c0 = min(r for r, _ in moved), min(c for _, c in moved)
        cr, cc = m(*face.circle)
        out.add((frozenset((r - r0, c - c0) for r, c in moved), (cr - r0, cc - c0)))
    return out


def test_r_bloxx_2_distinct_orientations_cover_all_symmetries():
    ed = load_edition()
    for die in ed.dice:
        for face in die.faces:
            listed = face.distinct_orientations()
            shapes = {(frozenset(cells), circle) for _, cells, circle in listed}
            assert len(shapes) == len(listed), face.name
            assert shapes == brute_force_shapes(face), face.name
            assert all(0 <= k < ORIENTATIONS for k, _, _ in listed)


def test_r_bloxx_2_symmetric_faces_have_fewer_orientations():
    ed = load_edition()
    counts = {f.name: len(f.distinct_orientations()) for d in ed.dice for f in d.faces}
    # The plus with the circle in the middle looks the same every way up.
    assert counts["b4"] == 1
    # A straight tromino circled in the middle: lying or standing.
    assert counts["w2"] == 2
    # An L of three circled at its end has no symmetry left.
    assert counts["w3"] == 8


def test_edition_placements_are_inside_and_distinct():
    ed = load_edition()
    geo = ed.geometry
    for die in ed.dice:
        for face in die.faces:
            seen = set()
            for p in ed.placements(face.name):
                assert all(0 <= r < ed.rows and 0 <= c < ed.columns for r, c in p.cells)
                assert p.mask == geo.mask_of(p.cells)
                assert p.circle in p.cells and p.circle_bit == geo.bit(*p.circle)
                cells, circle = orient(face.cells, face.circle, p.orientation)
                assert sorted((r + p.row, c + p.col) for r, c in cells) == sorted(p.cells)
                seen.add((p.mask, p.circle_bit))
            assert len(seen) == len(ed.placements(face.name))
