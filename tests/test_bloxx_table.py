"""Bloxx! table mode: naming and checking a placement from sheets before and after."""

from __future__ import annotations

import random

from engine.bloxx import (
    BloxxGame,
    BloxxState,
    Forfeit,
    Place,
    Roll,
    Sheet,
    judge_sheet_change,
    load_edition,
)
from engine.common import VerdictKind

EDITION = load_edition()
GEO = EDITION.geometry
BLANK = ["......."] * 10


def with_sheets(rows_per_player, roll=None) -> BloxxState:
    st = BloxxGame.create(len(rows_per_player), EDITION).new_initial_state()
    st.sheets = [Sheet.from_rows(GEO, rows) for rows in rows_per_player]
    if roll is not None:
        st.apply_action(Roll(roll))
    return st


def drawn(base: list[str], marks: dict) -> list[str]:
    """``base`` with squares {(r, c): symbol} written in."""
    rows = [list(r) for r in base]
    for (r, c), ch in marks.items():
        rows[r][c] = ch
    return ["".join(r) for r in rows]


def covered(st: BloxxState, action: Place):
    cells, circle = st.resolve(action)
    return frozenset(cells), circle


def test_every_legal_placement_is_recognised():
    st = with_sheets([BLANK, BLANK], roll=("w6", "b2"))
    first = next(iter(st.placements(0, "white")))
    st.apply_action(first)
    for die in ("white", "black"):
        for action in st.placements(1, die):
            trial = st.clone()
            trial.apply_action(action)
            after = trial.sheets[1].to_json()
            v = judge_sheet_change(st, 1, after, before=st.sheets[1].to_json())
            assert v.kind is VerdictKind.ACTION, v
            assert v.action.die == die and v.player == "p2"
            # White is the active player's die: drawn as a cross, so any orientation
            # covering the same squares explains it; otherwise the circle must match too.
            got, want = covered(st, v.action), covered(st, action)
            assert got[0] == want[0]
            if die == "black":
                assert got[1] == want[1]
            applied = st.clone()
            applied.apply_action(v.action)
            assert applied.sheets[1] == trial.sheets[1]


def test_recognised_placement_reports_points():
    # (9,3) holds a 2.
    st = with_sheets([BLANK], roll=("w1", "b1"))
    after = drawn(BLANK, {(9, 3): "o", (9, 4): "x"})
    v = judge_sheet_change(st, 0, {"sheet": after})
    assert v.kind is VerdictKind.ACTION
    assert v.points == 2 + 2  # the circled 2, and two squares no longer empty
    assert v.to_json()["action"]["type"] == "place"
    assert st.sheets[0].rows() == BLANK  # the engine did not move


def test_no_change():
    st = with_sheets([BLANK], roll=("w1", "b1"))
    v = judge_sheet_change(st, 0, BLANK)
    assert v.kind is VerdictKind.NO_CHANGE and v.action is None


def test_no_change_for_a_player_who_cannot_place_offers_the_forfeit():
    stuck = ["..xxxxx"] + ["xxxxxxx"] * 9
    st = with_sheets([stuck], roll=("w2", "b1"))
    v = judge_sheet_change(st, 0, stuck)
    assert v.kind is VerdictKind.NO_CHANGE
    assert v.action == Forfeit(0) and v.rule == "R-BLOXX-6"


def test_r_bloxx_3_floating_shape_is_illegal():
    st = with_sheets([BLANK], roll=("w1", "b1"))
    after = drawn(BLANK, {(5, 3): "o", (5, 4): "x"})
    v = judge_sheet_change(st, 0, after)
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-3"
    assert v.action.die == "white"
    assert "bottom row" in v.why


def test_r_bloxx_5_circle_drawn_on_the_active_players_die_is_illegal():
    st = with_sheets([BLANK, BLANK], roll=("w1", "b1"))
    st.apply_action(next(iter(st.placements(0, "white"))))
    circled = drawn(BLANK, {(9, 0): "o", (9, 1): "x"})
    v = judge_sheet_change(st, 1, circled)
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-5"
    crossed = drawn(BLANK, {(9, 0): "x", (9, 1): "x"})
    assert judge_sheet_change(st, 1, crossed).kind is VerdictKind.ACTION


def test_r_bloxx_5_cross_where_a_circle_belongs_is_illegal():
    st = with_sheets([BLANK], roll=("w1", "b1"))
    v = judge_sheet_change(st, 0, drawn(BLANK, {(9, 0): "x", (9, 1): "x"}))
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-5"


def test_r_bloxx_2_circle_on_the_wrong_square_is_illegal():
    # w2 is a straight three circled in the middle.
    st = with_sheets([BLANK], roll=("w2", "b1"))
    v = judge_sheet_change(st, 0, drawn(BLANK, {(9, 0): "o", (9, 1): "x", (9, 2): "x"}))
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-2"
    ok = judge_sheet_change(st, 0, drawn(BLANK, {(9, 0): "x", (9, 1): "o", (9, 2): "x"}))
    assert ok.kind is VerdictKind.ACTION


def test_r_bloxx_4_missing_or_extra_gaps_are_illegal():
    base = ["......."] * 9 + ["x......"]
    st = with_sheets([base], roll=("w4", "b1"))
    shape = {(8, 0): "o", (8, 1): "x", (8, 2): "x", (8, 3): "x"}
    right = drawn(base, {**shape, (9, 1): "#", (9, 2): "#", (9, 3): "#"})
    assert judge_sheet_change(st, 0, right).kind is VerdictKind.ACTION
    missing = drawn(base, {**shape, (9, 1): "#"})
    v = judge_sheet_change(st, 0, missing)
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-4"
    assert "(9,2)" in v.why and "(9,3)" in v.why
    extra = drawn(base, {**shape, (9, 1): "#", (9, 2): "#", (9, 3): "#", (9, 4): "#"})
    v = judge_sheet_change(st, 0, extra)
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-4"


def test_r_bloxx_6_drawing_out_of_turn_is_illegal():
    st = with_sheets([BLANK, BLANK], roll=("w1", "b1"))
    v = judge_sheet_change(st, 1, drawn(BLANK, {(9, 0): "o", (9, 1): "x"}))
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-6"
    unrolled = with_sheets([BLANK])
    v = judge_sheet_change(unrolled, 0, drawn(BLANK, {(9, 0): "o", (9, 1): "x"}))
    assert v.kind is VerdictKind.ILLEGAL and v.rule == "R-BLOXX-6"


def test_a_shape_that_was_not_rolled_is_unrecognised():
    st = with_sheets([BLANK], roll=("w1", "b1"))
    v = judge_sheet_change(st, 0, drawn(BLANK, {(9, 0): "o", (9, 1): "x", (9, 2): "x"}))
    assert v.kind is VerdictKind.UNRECOGNISED
    assert "w1" in v.why and "b1" in v.why


def test_changed_filled_squares_are_unrecognised():
    base = ["......."] * 9 + ["xo....."]
    st = with_sheets([base], roll=("w1", "b1"))
    v = judge_sheet_change(st, 0, ["......."] * 9 + ["xx....."])
    assert v.kind is VerdictKind.UNRECOGNISED and "(9,1)" in v.why
    gap_base = ["......."] * 8 + ["xx.....", "x#....."]
    st = with_sheets([gap_base], roll=("w1", "b1"))
    v = judge_sheet_change(st, 0, ["......."] * 8 + ["xx.....", "xx....."])
    assert v.kind is VerdictKind.UNRECOGNISED and v.rule == "R-BLOXX-4"


def test_gaps_alone_and_unreadable_sheets_are_unrecognised():
    base = ["......."] * 8 + ["xx.....", "x......"]
    st = with_sheets([base], roll=("w1", "b1"))
    v = judge_sheet_change(st, 0, ["......."] * 8 + ["xx.....", "x#....."])
    assert v.kind is VerdictKind.UNRECOGNISED
    assert judge_sheet_change(st, 0, ["......."] * 9).kind is VerdictKind.UNRECOGNISED
    assert judge_sheet_change(st, 0, ["...?..."] * 10).kind is VerdictKind.UNRECOGNISED
    assert judge_sheet_change(st, 0, "nonsense").kind is VerdictKind.UNRECOGNISED


def test_before_must_match_the_engine_record():
    st = with_sheets([BLANK], roll=("w1", "b1"))
    other = ["......."] * 9 + ["x......"]
    v = judge_sheet_change(st, 0, drawn(other, {(9, 1): "o", (9, 2): "x"}), before=other)
    assert v.kind is VerdictKind.UNRECOGNISED and "record" in v.why


def test_random_games_replay_through_table_mode():
    """Every placement of random games, seen only as sheets, is named and legal."""
    rng = random.Random(4)
    for n in (1, 3):
        st = BloxxGame.create(n, EDITION).new_initial_state()
        while not st.is_terminal():
            if st.roll is None:
                st.apply_action(rng.choice(list(st.legal_actions())))
                continue
            p = rng.choice(st.pending_players())
            options = [a for d in EDITION.dice for a in st.placements(p, d.name)]
            if not options:
                v = judge_sheet_change(st, p, st.sheets[p].rows())
                assert v.action == Forfeit(p)
                st.apply_action(v.action)
                continue
            trial = st.clone()
            trial.apply_action(rng.choice(options))
            v = judge_sheet_change(st, p, trial.sheets[p].rows())
            assert v.kind is VerdictKind.ACTION, v
            st.apply_action(v.action)
            assert st.sheets[p] == trial.sheets[p]
