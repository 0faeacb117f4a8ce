"""R-BLOX-14: the edition is data, validated on load."""

from __future__ import annotations

import json

import pytest

from engine import EditionError
from engine.blox import check_position, load_edition, parse_edition
from engine.blox.position import Problem


def default_data() -> dict:
    return load_edition().to_json()


def test_default_edition_matches_the_ruling():
    ed = load_edition()
    assert ed.colors == ("black", "white", "grey", "purple")
    assert ed.total_blocks == 40 and ed.total_cards == 60 and ed.jokers == 4
    assert len(ed.marked_spaces(1)) == 12
    assert len(ed.marked_spaces(2)) == 4 and len(ed.marked_spaces(3)) == 4 and len(ed.marked_spaces(4)) == 2
    ones = sorted(ed.color_at(p) for p in ed.marked_spaces(1))
    assert ones.count("grey") == 2 and ones.count("white") == 2
    assert ones.count("black") == 4 and ones.count("purple") == 4


def test_round_trip_through_a_file(tmp_path):
    path = tmp_path / "edition.json"
    path.write_text(json.dumps(default_data()))
    assert load_edition(path) == load_edition()


def test_marks_that_do_not_add_up():
    data = default_data()
    data["marks"][0][0] = 1
    with pytest.raises(EditionError, match="add up to 41 blocks"):
        parse_edition(data)


def test_unknown_colour_on_a_space():
    data = default_data()
    data["board"][3][4] = "orange"
    with pytest.raises(EditionError, match=r"space \[3,4\] has unknown colour 'orange'"):
        parse_edition(data)


def test_a_mark_on_a_space_that_cannot_hold_it():
    data = default_data()
    r, c = next((r, c) for r in range(9) for c in range(9) if data["marks"][r][c] == 4)
    data["marks"][r][c] = 5
    with pytest.raises(EditionError, match=rf"\[{r},{c}\] carries 5 tower marks"):
        parse_edition(data)


def test_two_player_setup_needs_grey_and_white_one_marks():
    data = default_data()
    for r in range(9):
        for c in range(9):
            if data["marks"][r][c] == 1 and data["board"][r][c] == "white":
                data["board"][r][c] = "black"
    with pytest.raises(EditionError, match="needs 2 one-mark white spaces"):
        parse_edition(data)


def test_missing_field_and_bad_json(tmp_path):
    data = default_data()
    del data["hand_size"]
    with pytest.raises(EditionError, match="missing field 'hand_size'"):
        parse_edition(data)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(EditionError, match="not valid JSON"):
        load_edition(bad)
    with pytest.raises(EditionError, match="not found"):
        load_edition(tmp_path / "missing.json")


def test_player_colours_must_differ_from_space_colours():
    data = default_data()
    data["player_colors"][0] = "grey"
    with pytest.raises(EditionError, match="also space colours"):
        parse_edition(data)


def empty_cells():
    return [[None] * 9 for _ in range(9)]


def test_position_check_accepts_a_setup_position():
    import random

    from engine.blox import BloxGame

    state = BloxGame(["green", "brown"]).new_initial_state(random.Random(0))
    assert check_position(state.edition, state.observation_state()["cells"]) == []


def test_position_check_finds_every_problem():
    ed = load_edition()
    cells = empty_cells()
    cells[0][0] = {"tower": ["grey"] * 6}
    cells[0][1] = {"figure": "green", "tower": ["black"]}
    cells[0][2] = {"tower": ["orange"]}
    cells[0][3] = {"figure": "pink"}
    for c in range(5):
        cells[2][c] = {"figure": "blue"}
    for c in range(9):
        cells[4][c] = {"tower": ["grey"]}
    problems = {p.problem for p in check_position(ed, cells, player_blocks={"green": {"grey": 1}})}
    assert problems == {
        Problem.TOWER_TOO_TALL,
        Problem.TWO_THINGS,
        Problem.UNKNOWN_COLOR,
        Problem.TOO_MANY_FIGURES,
        Problem.TOO_MANY_BLOCKS,
    }
    messages = [str(p) for p in check_position(ed, cells, player_blocks={"green": {"grey": 1}})]
    assert any("16 grey blocks counted" in m for m in messages)
    assert check_position(ed, [[None] * 9] * 3)[0].problem is Problem.MALFORMED
