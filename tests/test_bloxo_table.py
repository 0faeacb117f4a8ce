"""Bloxo table mode: inference from stable observations, one clear verdict per change."""

from __future__ import annotations

import json

import pytest

from engine.bloxo import (
    END_BLOCKED,
    BloxoGame,
    BloxoState,
    BloxoVerdict,
    Pass,
    Place,
    Redraw,
    TableChange,
    infer,
    load_edition,
)
from engine.common import IllegalAction, VerdictKind

ED = load_edition()
P, Y, B, G = "pink", "yellow", "blue", "green"
SHAPE = {c.name: c.shape for c in ED.colors}


def card(at, *colours):
    return {"at": list(at), "quadrants": [[c, SHAPE[c]] for c in colours]}


def obs(*cards, stable=True, occluded=()):
    return {"game": "bloxo", "frame": 1, "t": 0.1, "stable": stable, "occluded": [list(o) for o in occluded],
            "confidence": 0.99, "state": {"cards": list(cards)}}


def table(*cards, players=("ann", "bob")) -> BloxoState:
    """A table-mode state built by inferring and applying one card at a time."""
    state = BloxoGame(list(players), ED).new_table_state(obs(cards[0]))
    for k in range(1, len(cards)):
        verdict = infer(state, obs(*cards[: k + 1]))
        assert verdict.kind is VerdictKind.ACTION, verdict
        state.apply_action(verdict.action)
    return state


def verdict_for(state: BloxoState, observation) -> BloxoVerdict:
    before = json.dumps(state.to_json(), sort_keys=True)
    verdict = infer(state, observation)
    assert json.dumps(state.to_json(), sort_keys=True) == before  # inference never changes the state
    json.dumps(verdict.to_json())  # serialisable
    assert verdict.to_json()["change"] == verdict.change.value
    return verdict


START = card((0, 0), G, G, G, G)


def test_new_table_state_counts_hidden_cards():
    state = BloxoGame(["ann", "bob", "cy", "dee"], ED).new_table_state(obs(START))
    assert not state.full_information
    assert state.hand_counts == [6, 6, 6, 6] and state.out_count == 3
    assert state.pile_count == 40 - 3 - 24 - 1
    assert state.tableau[(0, 0)].card == "gggg-1"
    for bad in (obs(), obs(card((1, 0), G, G, G, G)), obs(START, card((0, 1), G, G, G, G)),
                obs(card((0, 0), P, G, P, G))):
        with pytest.raises(ValueError):
            BloxoGame(["ann", "bob"], ED).new_table_state(bad)


@pytest.mark.parametrize(
    "first, second, points",
    [
        (card((0, 0), P, Y, G, B), card((1, 0), Y, B, P, G), 4),  # rulebook: yellow + green pairs
        (START, card((0, -1), P, P, G, G), 6),  # rulebook: two greens above four greens
        (card((0, 0), P, P, B, B), card((1, 0), P, P, B, B), 8),  # rulebook: pinks and blues
    ],
)
def test_rulebook_examples_are_named_with_their_points(first, second, points):
    state = table(first)
    verdict = verdict_for(state, obs(first, second))
    assert verdict.kind is VerdictKind.ACTION and verdict.change is TableChange.PLACED
    assert verdict.points == points and verdict.player == "ann"
    action = verdict.action
    assert action.at == tuple(second["at"])
    assert ED.card(action.card).seen(action.rotation) == tuple(q[0] for q in second["quadrants"])
    assert verdict.implied_cards == (action.card,)
    state.apply_action(action)
    assert state.scores() == {"ann": points, "bob": 0}
    assert state.hand_counts == [6, 6] and state.current_player() == "bob"


def test_unchanged_or_unstable_observation_is_no_change():
    state = table(START)
    assert verdict_for(state, obs(START)).kind is VerdictKind.NO_CHANGE
    unstable = obs(START, card((0, -1), P, P, G, G), stable=False)
    assert verdict_for(state, unstable).kind is VerdictKind.NO_CHANGE
    # A card hidden by a hand is not a removed card.
    state = table(START, card((0, -1), P, P, G, G))
    v = verdict_for(state, obs(START, occluded=[(0, -1)]))
    assert v.kind is VerdictKind.NO_CHANGE


def test_removed_card():
    state = table(START, card((0, -1), P, P, G, G))
    v = verdict_for(state, obs(START))
    assert v.change is TableChange.REMOVED and v.kind is VerdictKind.UNRECOGNISED
    assert "[0, -1]" in v.why and "gone" in v.why


def test_replaced_card_counts_as_removed():
    state = table(START, card((0, -1), P, P, G, G))
    v = verdict_for(state, obs(START, card((0, -1), Y, Y, G, G)))
    assert v.change is TableChange.REMOVED and "replaced" in v.why


def test_moved_card():
    state = table(START, card((0, -1), P, P, G, G))
    v = verdict_for(state, obs(START, card((-1, 0), P, G, G, P)))
    assert v.change is TableChange.MOVED and "[0, -1]" in v.why and "[-1, 0]" in v.why


def test_card_turned_in_place_is_moved():
    state = table(START, card((0, -1), P, P, G, G))
    v = verdict_for(state, obs(START, card((0, -1), G, P, P, G)))
    assert v.change is TableChange.MOVED and "turned" in v.why


def test_two_new_cards():
    state = table(START)
    v = verdict_for(state, obs(START, card((0, -1), P, P, G, G), card((0, 1), G, G, Y, Y)))
    assert v.change is TableChange.TWO_NEW and v.kind is VerdictKind.UNRECOGNISED
    assert {c.at for c in v.candidates} == {(0, -1), (0, 1)}


def test_mismatched_edge_names_the_side():
    """R-BLOXO-3, rulebook diagram 'you can't do this'."""
    state = table(START)
    v = verdict_for(state, obs(START, card((1, 0), P, P, G, G)))
    assert v.kind is VerdictKind.ILLEGAL and v.change is TableChange.MISMATCHED_EDGE
    assert v.rule == "R-BLOXO-3" and "west" in v.why and "NW" in v.why
    assert isinstance(v.action, Place) and v.action.at == (1, 0)
    with pytest.raises(IllegalAction):
        state.apply_action(v.action)


def test_card_not_adjacent():
    state = table(START)
    v = verdict_for(state, obs(START, card((1, 1), G, G, Y, Y)))
    assert v.kind is VerdictKind.ILLEGAL and v.change is TableChange.NOT_ADJACENT
    assert v.rule == "R-BLOXO-3"


def test_card_unknown_to_the_edition():
    """R-BLOXO-1: a diagonal pair is no card."""
    state = table(START)
    v = verdict_for(state, obs(START, card((0, 1), G, P, G, P)))
    assert v.change is TableChange.UNKNOWN_CARD and v.rule == "R-BLOXO-1"


def test_card_whose_copies_are_all_played():
    """The default edition has one four-green card, already the start card."""
    assert len(ED.cards_of_design((G, G, G, G))) == 1
    state = table(START)
    v = verdict_for(state, obs(START, card((0, 1), G, G, G, G)))
    assert v.change is TableChange.NO_COPY_LEFT and v.kind is VerdictKind.UNRECOGNISED
    # three copies of a halves card: the fourth is impossible
    state = table(START, card((0, 1), G, G, Y, Y), card((0, 2), Y, Y, G, G), card((0, 3), G, G, Y, Y))
    assert len(state.tableau) == 4
    v = verdict_for(state, obs(*(dict(card(p, *s)) for p, s in _looks(state)), card((0, 4), Y, Y, G, G)))
    assert v.change is TableChange.NO_COPY_LEFT


def _looks(state):
    return [(p, s) for p, s in state.looks().items()]


def test_bad_observations():
    state = table(START)
    wrong_shape = card((0, -1), P, P, G, G)
    wrong_shape["quadrants"][0][1] = "star"
    v = verdict_for(state, obs(START, wrong_shape))
    assert v.change is TableChange.BAD_OBSERVATION and "R-BLOXO-1" in v.why
    off_grid = card((0.5, -1), P, P, G, G)
    assert verdict_for(state, obs(START, off_grid)).change is TableChange.BAD_OBSERVATION
    assert verdict_for(state, {"game": "blox", "state": {"cards": []}}).change is TableChange.BAD_OBSERVATION
    assert verdict_for(state, obs(START, START)).change is TableChange.BAD_OBSERVATION


def test_redraw_of_a_one_colour_start_card():
    """R-BLOXO-7: before the first turn a one-colour start card may be replaced, once."""
    state = table(START)
    v = verdict_for(state, obs(card((0, 0), Y, Y, Y, Y)))
    assert v.kind is VerdictKind.ACTION and v.change is TableChange.REDRAW
    assert isinstance(v.action, Redraw)
    state.apply_action(v.action)
    assert state.tableau[(0, 0)].card == "yyyy-1" and state.pile_count == 40 - 1 - 12 - 1
    v = verdict_for(state, obs(card((0, 0), B, B, B, B)))
    assert v.kind is VerdictKind.ILLEGAL and v.change is TableChange.REDRAW_REFUSED and v.rule == "R-BLOXO-7"


def test_mixed_start_card_cannot_be_redrawn():
    state = table(card((0, 0), P, P, G, G))
    v = verdict_for(state, obs(card((0, 0), Y, Y, Y, Y)))
    assert v.change is TableChange.REDRAW_REFUSED and "single colour" in v.why


def test_full_information_state_checks_the_hand():
    game = BloxoGame(["ann", "bob"], ED)
    rest = [c for c in ED.card_ids if c not in ("gggg-1", "ppgg-1")]
    deck = rest[:1] + ["ppgg-1"] + rest[1:6] + rest[6:12] + ["gggg-1"] + rest[12:]
    state = game.new_initial_state(deck=deck)
    assert "ppgg-1" in state.hands[0]
    v = verdict_for(state, obs(START, card((0, -1), P, P, G, G)))
    assert v.kind is VerdictKind.ACTION and v.action.card == "ppgg-1" and v.points == 6
    bob_only = next(c for c in state.hands[1]
                    if ED.card(c).design not in {ED.card(x).design for x in state.hands[0]})
    seen = ED.card(bob_only).seen(0)
    v = verdict_for(state, obs(START, card((0, 1), *seen)))
    assert v.change is TableChange.NOT_IN_HAND


def test_game_over_and_table_mode_passes():
    """Table mode: passes are reported by the table; forced passes by every player end the
    game (R-BLOXO-6) and any later change is refused."""
    state = table(START)
    assert list(state.legal_actions())[-1] == Pass()
    state.apply_action(Pass(forced=True))
    assert state.scores() == {"ann": -4, "bob": 0} and state.hand_counts == [6, 6]
    assert state.pile_count == 40 - 1 - 12 - 1 - 1 and state.out_count == 2
    state.apply_action(Pass(forced=True))
    assert state.is_terminal() and state.end_reason == END_BLOCKED
    v = verdict_for(state, obs(START, card((0, -1), P, P, G, G)))
    assert v.kind is VerdictKind.ILLEGAL and v.change is TableChange.GAME_OVER and v.rule == "R-BLOXO-6"


def test_table_mode_pass_by_choice_does_not_count_toward_the_end():
    state = table(START)
    state.apply_action(Pass(forced=True))
    state.apply_action(Pass())
    assert not state.is_terminal() and state.stuck == set()


def test_table_mode_state_json_round_trip():
    state = table(START, card((0, -1), P, P, G, G), card((1, -1), P, B, Y, G))
    state.apply_action(Pass(forced=False))
    data = json.loads(json.dumps(state.to_json()))
    assert data["hands"] is None and data["draw_pile"] is None
    again = BloxoState.from_json(state.game, data)
    assert again == state
    data["pile_count"] += 1
    with pytest.raises(ValueError, match="add up"):
        BloxoState.from_json(state.game, data)


def test_table_mode_legal_placements_cover_unplayed_designs():
    state = table(START)
    legal = list(state.legal_placements())
    assert legal and all(a.card != "gggg-1" for a in legal)
    # every legal placement, when observed, is inferred as exactly that placement
    for a in legal[:40]:
        seen = ED.card(a.card).seen(a.rotation)
        v = infer(state, obs(START, card(a.at, *seen)))
        assert v.kind is VerdictKind.ACTION and v.action.at == a.at
        assert ED.card(v.action.card).seen(v.action.rotation) == seen
        assert v.points == state.points_for(a)
