"""Block Out! engine: edition, every R-BLOCKOUT ruling (legal and illegal), stability
events, JSON round trip, undo and clone."""

from __future__ import annotations

import json
import random
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from engine.blockout import (
    ACTION_CARDS_TOTAL,
    BLOCK_CARDS_TOTAL,
    COUNT_SECONDS,
    FALL_DRAW,
    HAND_SIZE,
    PASS,
    REVERSE,
    Block,
    BlockOutEdition,
    BlockOutGame,
    BlockOutState,
    Card,
    CardKind,
    Draw,
    EditionError,
    Fell,
    FinalBlock,
    IllegalAction,
    Phase,
    PlayBlock,
    PlayPass,
    PlayReverse,
    StabilityEvent,
    StabilityKind,
    Stood,
    WinReason,
    action_from_json,
    load_edition,
)
from engine.common import load_edition_data

EDITION = load_edition()


# --------------------------------------------------------------------------- helpers


def B(text: str) -> Block:
    color, size = text.split()
    return Block(color, size)


def C(text: str) -> Card:
    return Card.from_json(text)


def make_state(
    hands: list[list[str]],
    *,
    stack: tuple[str, ...] = (),
    draw_top: tuple[str, ...] = (),
    discard: tuple[str, ...] = (),
    current: int = 0,
    direction: int = 1,
    phase: str = "action",
    count: dict[str, Any] | None = None,
    advanced: bool = False,
    rng: random.Random | None = None,
    all_in_draw: bool = True,
) -> BlockOutState:
    """A hand-built state through from_json (so validation runs too). Cards not named in
    hands, draw_top or discard go to the bottom of the draw pile (or, with all_in_draw False,
    to the discard pile); ``draw_top`` lists the next cards to be drawn, first drawn first."""
    rest = Counter(EDITION.deck())
    named = [c for h in hands for c in h] + list(draw_top) + list(discard)
    for name in named:
        card = C(name)
        assert rest[card] > 0, f"edition has no more {name}"
        rest[card] -= 1
    leftover = [c.to_json() for c in sorted(rest.elements())]
    draw_pile = (leftover if all_in_draw else []) + list(reversed(draw_top))
    disc = list(discard) + ([] if all_in_draw else leftover)
    data = {
        "game": "blockout",
        "players": [f"p{i + 1}" for i in range(len(hands))],
        "advanced": advanced,
        "stack": [B(s).to_json() for s in stack],
        "hands": [list(h) for h in hands],
        "draw_pile": draw_pile,
        "discard": disc,
        "direction": direction,
        "current": current,
        "phase": phase,
        "count": count,
        "winner": None,
        "win_reason": None,
    }
    return BlockOutState.from_json(data, rng=rng or random.Random(0))


def frozen(state: BlockOutState) -> tuple[Any, ...]:
    rng_state = None if state.rng is None else state.rng.getstate()
    return (json.dumps(state.to_json(), sort_keys=True), rng_state, len(state.history()))


def assert_illegal(state: BlockOutState, action: Any, rule: str, player: Any = None) -> IllegalAction:
    before = frozen(state)
    with pytest.raises(IllegalAction) as info:
        state.apply_action(action, player=player)
    assert info.value.rule == rule, info.value
    assert frozen(state) == before, "an illegal action changed the state"
    assert not state.is_legal(action, player)
    return info.value


def assert_event_illegal(state: BlockOutState, event: Any, rule: str = "R-BLOCKOUT-3") -> None:
    before = frozen(state)
    with pytest.raises(IllegalAction) as info:
        state.apply_stability_event(event)
    assert info.value.rule == rule
    assert frozen(state) == before


def ev(name: str, t: float) -> dict[str, Any]:
    return {"seq": 1, "game": "blockout", "kind": "stability", "event": name, "t": t}


def deck_counter(state: BlockOutState) -> Counter[Card]:
    return Counter(c for h in state.hands for c in h) + Counter(state.draw_pile) + Counter(state.discard)


ALL9 = ("yellow small", "yellow medium", "yellow large", "black small", "black medium",
        "black large", "red small", "red medium", "red large")


# --------------------------------------------------------------------------- edition (R-BLOCKOUT-1)


def test_default_edition_contents_r_blockout_1() -> None:
    assert len(EDITION.blocks) == 9 and len(set(EDITION.blocks)) == 9
    deck = EDITION.deck()
    assert len(deck) == 55
    assert sum(c.is_block_card for c in deck) == BLOCK_CARDS_TOTAL == 43
    assert sum(not c.is_block_card for c in deck) == ACTION_CARDS_TOTAL == 12
    kinds = {c.kind for c in deck}
    assert kinds == set(CardKind), "every card kind of R-BLOCKOUT-1 is in the deck"
    assert set(EDITION.colors) == {"yellow", "black", "red"}
    assert set(EDITION.sizes) == {"small", "medium", "large"}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["cards"][0].update(count=4), "block cards total 44"),
        (lambda d: d["cards"][-1].update(count=5), "total 11"),
        (lambda d: d["cards"][0].update(color="green"), "unknown colour"),
        (lambda d: d["cards"][12].update(size="huge"), "unknown size"),
        (lambda d: d["cards"][0].update(kind="wild"), "unknown kind"),
        (lambda d: d["cards"][0].pop("size"), "needs 'size'"),
        (lambda d: d["cards"][-1].update(color="red"), "takes no 'color'"),
        (lambda d: d["cards"].append(dict(d["cards"][-1], count=0)), "listed twice"),
        (lambda d: d["colors"].append("blue"), "3 entries"),
        (lambda d: d.update(sizes=["small", "small", "large"]), "duplicates"),
        (lambda d: d["cards"][0].update(count=-1), "non-negative"),
        (lambda d: d.update(game="blox"), "'game'"),
    ],
)
def test_edition_validation_rejects(mutate: Any, message: str) -> None:
    data = load_edition_data("blockout")
    mutate(data)
    with pytest.raises(EditionError, match=message):
        BlockOutEdition.from_data(data)


def test_edition_from_file(tmp_path: Any) -> None:
    data = load_edition_data("blockout")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(data))
    assert load_edition(good) == EDITION
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(EditionError):
        load_edition(bad)
    with pytest.raises(EditionError, match="not found"):
        load_edition(tmp_path / "missing.json")


def test_card_kinds_allow_r_blockout_1() -> None:
    blocks = EDITION.blocks
    assert [b for b in blocks if C("block:red:medium").allows(b)] == [B("red medium")]
    assert {b for b in blocks if C("color:black").allows(b)} == {B("black small"), B("black medium"), B("black large")}
    assert {b for b in blocks if C("size:large").allows(b)} == {B("yellow large"), B("black large"), B("red large")}
    assert [b for b in blocks if C("any").allows(b)] == list(blocks)
    assert not any(PASS.allows(b) or REVERSE.allows(b) for b in blocks)
    for card in EDITION.iter_card_types():
        assert Card.from_json(card.to_json()) == card
    with pytest.raises(ValueError):
        Card.from_json("color:black:small")
    with pytest.raises(ValueError):
        Card(CardKind.BLOCK, "red")


# --------------------------------------------------------------------------- setup


@pytest.mark.parametrize("n", range(2, 7))
def test_deal_2_to_6_players(n: int) -> None:
    state = BlockOutGame.create(n).new_initial_state(random.Random(n))
    assert [len(h) for h in state.hands] == [HAND_SIZE] * n
    assert len(state.draw_pile) == 55 - HAND_SIZE * n and not state.discard
    assert deck_counter(state) == Counter(EDITION.deck())
    assert state.stack == [] and state.phase is Phase.ACTION and state.current == 0


@pytest.mark.parametrize("n", [0, 1, 7])
def test_player_count_out_of_range(n: int) -> None:
    with pytest.raises(ValueError, match="2 to 6"):
        BlockOutGame.create(n)


def test_first_player_option() -> None:
    state = BlockOutGame.create(4, first_player=2).new_initial_state(random.Random(1))
    assert state.current == 2 and state.current_name == "p3"


# --------------------------------------------------------------------------- R-BLOCKOUT-1 / 2 placing


def test_play_block_card_legal_r_blockout_2() -> None:
    s = make_state([["color:black", "pass"], ["any"]], stack=("black small", "red large"))
    legal = set(s.legal_actions())
    assert legal == {
        PlayBlock(C("color:black"), B("black medium")),
        PlayBlock(C("color:black"), B("black large")),
        PlayPass(),
    }
    s.apply_action(PlayBlock(C("color:black"), B("black large")), player="p1")
    assert s.stack[-1] == B("black large")
    assert s.hands[0] == [PASS] and s.discard[-1] == C("color:black")
    assert s.phase is Phase.COUNT and s.current == 0


def test_block_not_matching_card_is_illegal_r_blockout_1() -> None:
    s = make_state([["block:yellow:small", "size:large"], ["any"]], stack=("red small",))
    e = assert_illegal(s, PlayBlock(C("block:yellow:small"), B("yellow medium")), "R-BLOCKOUT-1")
    assert "does not match" in e.why
    assert_illegal(s, PlayBlock(C("size:large"), B("red medium")), "R-BLOCKOUT-1")
    assert_illegal(s, PlayBlock(PASS, B("red medium")), "R-BLOCKOUT-1")
    assert_illegal(s, PlayBlock(C("any"), B("green small")), "R-BLOCKOUT-1")


def test_block_already_on_stack_is_illegal_r_blockout_2() -> None:
    s = make_state([["any", "color:red"], ["any"]], stack=("red small", "yellow large"))
    e = assert_illegal(s, PlayBlock(C("any"), B("yellow large")), "R-BLOCKOUT-2")
    assert "already on the stack" in e.why
    assert_illegal(s, PlayBlock(C("color:red"), B("red small")), "R-BLOCKOUT-2")
    s.apply_action(PlayBlock(C("color:red"), B("red medium")))  # the same card, a free block: fine


def test_card_not_held_is_illegal_r_blockout_2() -> None:
    s = make_state([["any"], ["pass", "reverse"]])
    assert_illegal(s, PlayPass(), "R-BLOCKOUT-2")
    assert_illegal(s, PlayReverse(), "R-BLOCKOUT-2")
    assert_illegal(s, PlayBlock(C("color:red"), B("red small")), "R-BLOCKOUT-2")


def test_pass_and_reverse_playable_before_any_stack_r_blockout_2() -> None:
    s = make_state([["pass", "reverse", "any"], ["pass"], ["any"]])
    legal = set(s.legal_actions())
    assert PlayPass() in legal and PlayReverse() in legal
    s.apply_action(PlayPass())
    assert s.stack == [] and s.current == 1 and s.phase is Phase.ACTION


def test_block_card_unplayable_when_its_blocks_are_on_stack_r_blockout_2() -> None:
    s = make_state([["block:yellow:small", "color:black"], ["any"]],
                   stack=("yellow small", "black small", "black medium", "black large"))
    assert list(s.legal_actions()) == [Draw()]


def test_draw_until_playable_r_blockout_2() -> None:
    s = make_state(
        [["block:yellow:small"], ["any"]],
        stack=("yellow small", "red small"),
        draw_top=("block:red:small", "color:red", "block:black:large", "pass"),
    )
    assert list(s.legal_actions()) == [Draw()]
    s.apply_action(Draw())
    # red small is on the stack: that card does not help; "any red" does (red medium and large).
    assert s.hands[0] == [C("block:yellow:small"), C("block:red:small"), C("color:red")]
    assert s.draw_pile[-1] == C("block:black:large")
    assert s.current == 0 and s.phase is Phase.ACTION
    assert Draw() not in set(s.legal_actions())


def test_draw_with_a_playable_card_is_illegal_r_blockout_2() -> None:
    s = make_state([["block:yellow:small", "reverse"], ["any"]], stack=("yellow small",))
    assert_illegal(s, Draw(), "R-BLOCKOUT-2")


def test_draw_reshuffles_discards_r_blockout_2() -> None:
    s = make_state(
        [["block:yellow:small"], ["any"]],
        stack=("yellow small",),
        discard=("pass",),
        all_in_draw=False,
        rng=random.Random(3),
    )
    assert s.draw_pile == [] and len(s.discard) > 1
    total_before = deck_counter(s)
    s.apply_action(Draw())
    assert deck_counter(s) == total_before
    assert s.discard == [], "the whole discard pile became the new draw pile"
    assert s.has_playable_card() and s._playable(s.hands[0][-1])
    assert all(not s._playable(c) for c in s.hands[0][1:-1])


def test_draw_reshuffle_is_seeded() -> None:
    def run(seed: int) -> list[Any]:
        s = make_state([["block:yellow:small"], ["any"]], stack=("yellow small",), discard=("pass",),
                       all_in_draw=False, rng=random.Random(seed))
        s.apply_action(Draw())
        return s.to_json()["draw_pile"]

    assert run(5) == run(5)
    assert len({json.dumps(run(seed)) for seed in range(6)}) > 1


def test_draw_without_rng_fails_cleanly() -> None:
    s = make_state([["block:yellow:small"], ["any"]], stack=("yellow small",), discard=("pass",),
                   all_in_draw=False)
    s.rng = None
    before = frozen(s)
    with pytest.raises(ValueError, match="rng"):
        s.apply_action(Draw())
    assert frozen(s) == before


def test_nothing_left_to_draw_passes_the_turn() -> None:
    # Every card in a hand, none playable for p1: the books are silent; the turn passes.
    rest = Counter(EDITION.deck())
    rest[C("block:yellow:small")] -= 1
    s = make_state([["block:yellow:small"], [c.to_json() for c in rest.elements()]], stack=("yellow small",))
    assert s.draw_pile == [] and s.discard == []
    s.apply_action(Draw())
    assert s.current == 1 and s.phase is Phase.ACTION and len(s.hands[0]) == 1


# --------------------------------------------------------------------------- R-BLOCKOUT-3 the count


def test_count_then_next_player_r_blockout_3() -> None:
    s = make_state([["any", "pass"], ["any"], ["pass"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    assert s.phase is Phase.COUNT and set(s.legal_actions()) == {Stood(), Fell()}
    s.apply_action(Stood())
    assert s.current == 1 and s.phase is Phase.ACTION and s.stack == [B("red small"), B("red large")]


def test_playing_before_count_ended_is_illegal_r_blockout_3() -> None:
    s = make_state([["any", "pass"], ["any", "pass"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    assert_illegal(s, PlayPass(), "R-BLOCKOUT-3")
    assert_illegal(s, PlayBlock(C("any"), B("yellow small")), "R-BLOCKOUT-3", player="p2")
    assert_illegal(s, PlayPass(), "R-BLOCKOUT-3", player=1)
    assert_illegal(s, Draw(), "R-BLOCKOUT-3")
    assert_illegal(s, FinalBlock(B("yellow small")), "R-BLOCKOUT-3")


def test_count_outcome_without_count_is_illegal_r_blockout_3() -> None:
    s = make_state([["any"], ["any"]], stack=("red small",))
    assert_illegal(s, Stood(), "R-BLOCKOUT-3")
    assert_illegal(s, Fell(), "R-BLOCKOUT-3")


def test_stability_events_stood_r_blockout_3() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    assert s.apply_stability_event(ev("placed", 10.0)) is None
    assert s.apply_stability_event(ev("counting", 10.6)) is None
    assert s.count is not None and s.count.placed_t == 10.0 and s.count.counting_t == 10.6
    assert_event_illegal(s, ev("stood", 10.6 + 2.9))  # a count cut short
    assert s.apply_stability_event(ev("stood", 10.6 + COUNT_SECONDS)) == Stood()
    assert s.current == 1 and s.phase is Phase.ACTION


def test_fall_during_the_count_r_blockout_3() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small", "black small", "yellow small"),
                   draw_top=("block:red:large", "reverse", "size:small"))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    s.apply_stability_event(ev("placed", 20.0))
    s.apply_stability_event(ev("counting", 20.5))
    assert s.apply_stability_event(ev("fell", 21.7)) == Fell()  # 1.2 s into the count
    assert s.stack == [] and len(s.free_blocks) == 9
    assert s.hands[0] == [PASS, C("block:red:large"), REVERSE, C("size:small")]
    assert s.phase is Phase.RESTART and s.current == 0


def test_fall_while_settling_before_count_r_blockout_3() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    s.apply_stability_event(StabilityEvent(StabilityKind.PLACED, 1.0))
    s.apply_stability_event(SimpleNamespace(event="fell", t=1.2))
    assert s.stack == [] and s.phase is Phase.RESTART


def test_stood_timing_tolerance_r_blockout_3() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    s.apply_stability_event(ev("counting", 100.0))
    assert_event_illegal(s, ev("stood", 102.98))
    assert s.apply_stability_event(ev("stood", 102.995)) == Stood()  # sensor granularity


def test_stood_without_counting_event_is_accepted() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    assert s.apply_stability_event({"event": "stood", "t": 0.5}) == Stood()
    assert s.current == 1


def test_stability_event_sequence_errors_r_blockout_3() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    s.apply_stability_event(ev("placed", 5.0))
    assert_event_illegal(s, ev("counting", 4.0))  # earlier than 'placed'
    assert_event_illegal(s, ev("placed", 5.5))  # a second placement
    s.apply_stability_event(ev("counting", 5.5))
    assert_event_illegal(s, ev("counting", 6.0))
    assert_event_illegal(s, ev("fell", 5.0))  # time going backwards
    assert s.phase is Phase.COUNT


def test_stability_events_outside_a_count() -> None:
    s = make_state([["any", "pass"], ["any"]])
    s.apply_action(PlayBlock(C("any"), B("red large")))  # first block: no count (R-BLOCKOUT-4)
    before = frozen(s)
    for name in ("placed", "counting", "stood"):
        assert s.apply_stability_event(ev(name, 1.0)) is None
    assert frozen(s) == before
    assert_event_illegal(s, ev("fell", 2.0))


@pytest.mark.parametrize(
    "bad",
    [
        {"kind": "action", "event": "stood", "t": 1.0},
        {"kind": "stability", "event": "wobbled", "t": 1.0},
        {"kind": "stability", "event": "stood"},
        {"kind": "stability", "event": "stood", "t": "soon"},
        {"kind": "stability", "event": "stood", "t": float("nan")},
        SimpleNamespace(event="stood"),
    ],
)
def test_malformed_stability_event(bad: Any) -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",))
    s.apply_action(PlayBlock(C("any"), B("red large")))
    before = frozen(s)
    with pytest.raises(ValueError):
        s.apply_stability_event(bad)
    assert frozen(s) == before


def test_stability_event_json_shape() -> None:
    e = StabilityEvent.coerce(ev("counting", 3))
    assert e == StabilityEvent(StabilityKind.COUNTING, 3.0)
    assert e.to_json() == {"kind": "stability", "event": "counting", "t": 3.0}


# --------------------------------------------------------------------------- R-BLOCKOUT-4 fall and new stack


def test_first_block_of_game_needs_no_count_r_blockout_4() -> None:
    s = make_state([["any", "pass"], ["any"]])
    s.apply_action(PlayBlock(C("any"), B("yellow small")))
    assert s.phase is Phase.ACTION and s.count is None and s.current == 1
    assert s.stack == [B("yellow small")]


def test_after_fall_new_stack_with_block_card_r_blockout_4() -> None:
    s = make_state([["any", "pass", "reverse", "color:red"], ["any"], ["pass"]],
                   stack=("red small", "black small"),
                   draw_top=("pass", "reverse", "pass", "size:large"))
    s.apply_action(PlayBlock(C("any"), B("yellow large")))
    s.apply_action(Fell())
    assert s.hands[0] == [PASS, REVERSE, C("color:red"), PASS, REVERSE, PASS]
    assert s.phase is Phase.RESTART and s.current == 0 and s.stack == []
    # Pass and Reverse are not allowed now; the new stack is started with a block card.
    assert_illegal(s, PlayPass(), "R-BLOCKOUT-4")
    assert_illegal(s, PlayReverse(), "R-BLOCKOUT-4")
    assert_illegal(s, Draw(), "R-BLOCKOUT-4")
    assert_illegal(s, PlayBlock(C("any"), B("red small")), "R-BLOCKOUT-6", player="p2")
    legal = set(s.legal_actions())
    assert legal == {PlayBlock(C("color:red"), B(f"red {z}")) for z in ("small", "medium", "large")}
    s.apply_action(PlayBlock(C("color:red"), B("red small")))  # a block that was in the old stack
    assert s.stack == [B("red small")] and s.count is None
    assert s.phase is Phase.ACTION and s.current == 1


def test_after_fall_draw_until_block_card_r_blockout_4() -> None:
    s = make_state([["block:black:small", "pass"], ["any"]], stack=("red small",),
                   draw_top=("reverse", "pass", "pass", "reverse", "pass", "size:medium", "any"))
    s.apply_action(PlayBlock(C("block:black:small"), B("black small")))
    s.apply_action(Fell())
    assert s.hands[0] == [PASS, REVERSE, PASS, PASS]
    assert list(s.legal_actions()) == [Draw()]
    s.apply_action(Draw())
    assert s.hands[0][-3:] == [REVERSE, PASS, C("size:medium")]
    assert s.draw_pile[-1] == C("any")
    assert s.phase is Phase.RESTART
    s.apply_action(PlayBlock(C("size:medium"), B("yellow medium")))
    assert s.current == 1


def test_fall_with_short_draw_pile_reshuffles_r_blockout_4() -> None:
    s = make_state([["any", "pass"], ["pass"]], stack=("red small",), draw_top=("reverse",),
                   all_in_draw=False, rng=random.Random(9))
    # draw pile holds just one card; the rest is in the discard pile
    assert len(s.draw_pile) == 1
    s.apply_action(PlayBlock(C("any"), B("red large")))
    s.apply_action(Fell())
    assert len(s.hands[0]) == 1 + FALL_DRAW and s.hands[0][1] == REVERSE
    assert deck_counter(s) == Counter(EDITION.deck())


def test_fall_on_the_ninth_block() -> None:
    s = make_state([["block:red:large", "pass"], ["any"]], stack=ALL9[:8],
                   draw_top=("any", "color:red", "pass"))
    s.apply_action(PlayBlock(C("block:red:large"), B("red large")))
    assert len(s.stack) == 9 and s.phase is Phase.COUNT and not s.free_blocks
    s.apply_action(Fell())
    assert not s.is_terminal() and s.winner is None
    assert s.stack == [] and len(s.free_blocks) == 9
    assert s.hands[0] == [PASS, C("any"), C("color:red"), PASS]
    assert s.phase is Phase.RESTART and s.current == 0


# --------------------------------------------------------------------------- R-BLOCKOUT-5 winning


def test_ninth_block_stood_wins_r_blockout_5() -> None:
    s = make_state([["block:red:large", "pass", "any"], ["any"]], stack=ALL9[:8])
    s.apply_action(PlayBlock(C("block:red:large"), B("red large")))
    assert not s.is_terminal()
    s.apply_stability_event(ev("counting", 0.0))
    s.apply_stability_event(ev("stood", 3.0))
    assert s.is_terminal() and s.winner == 0 and s.win_reason is WinReason.NINTH_BLOCK
    assert s.scores() == {"p1": 1, "p2": 0}
    assert list(s.legal_actions()) == []
    assert_illegal(s, PlayPass(), "R-BLOCKOUT-5")
    assert_illegal(s, Stood(), "R-BLOCKOUT-5")


def test_last_card_wins_basic_rule_r_blockout_5() -> None:
    s = make_state([["color:yellow"], ["any", "pass"]], stack=("red small",))
    s.apply_action(PlayBlock(C("color:yellow"), B("yellow small")))
    assert s.hands[0] == [] and not s.is_terminal(), "the win waits for the count"
    s.apply_action(Stood())
    assert s.is_terminal() and s.winner == 0 and s.win_reason is WinReason.LAST_CARD
    assert s.scores() == {"p1": 1, "p2": 0}


def test_last_card_pass_wins_basic_rule_r_blockout_5() -> None:
    s = make_state([["any"], ["pass"]], current=1)
    s.apply_action(PlayPass())
    assert s.is_terminal() and s.winner == 1 and s.win_reason is WinReason.LAST_CARD


def test_last_card_fell_is_no_win_r_blockout_5() -> None:
    s = make_state([["color:yellow"], ["any", "pass"]], stack=("red small",))
    s.apply_action(PlayBlock(C("color:yellow"), B("yellow small")))
    s.apply_action(Fell())
    assert not s.is_terminal() and len(s.hands[0]) == FALL_DRAW and s.phase is Phase.RESTART


def test_last_card_advanced_rule_final_block_stands_r_blockout_5() -> None:
    s = make_state([["color:yellow"], ["any", "pass"]], stack=("red small",), advanced=True)
    s.apply_action(PlayBlock(C("color:yellow"), B("yellow small")))
    s.apply_action(Stood())
    assert not s.is_terminal()
    assert s.phase is Phase.FINAL and s.current == 0
    free = [b for b in EDITION.blocks if b not in (B("red small"), B("yellow small"))]
    assert list(s.legal_actions()) == [FinalBlock(b) for b in free]
    assert_illegal(s, FinalBlock(B("red small")), "R-BLOCKOUT-5")
    assert_illegal(s, PlayPass(), "R-BLOCKOUT-5")
    assert_illegal(s, FinalBlock(B("black large")), "R-BLOCKOUT-6", player="p2")
    s.apply_action(FinalBlock(B("black large")), player="p1")
    assert s.phase is Phase.COUNT and s.stack[-1] == B("black large")
    s.apply_stability_event(ev("counting", 1.0))
    s.apply_stability_event(ev("stood", 4.0))
    assert s.is_terminal() and s.winner == 0 and s.win_reason is WinReason.LAST_CARD


def test_last_card_advanced_rule_final_block_falls_r_blockout_5() -> None:
    s = make_state([["pass"], ["any", "pass"]], stack=("red small", "red medium"), advanced=True,
                   draw_top=("any", "pass", "reverse"))
    s.apply_action(PlayPass())
    assert s.phase is Phase.FINAL and s.current == 0
    s.apply_action(FinalBlock(B("yellow small")))
    s.apply_action(Fell())
    assert not s.is_terminal()
    assert s.hands[0] == [C("any"), PASS, REVERSE] and s.phase is Phase.RESTART and s.stack == []


def test_advanced_final_block_on_empty_stack_needs_no_count() -> None:
    s = make_state([["pass"], ["any", "pass"]], advanced=True)
    s.apply_action(PlayPass())
    s.apply_action(FinalBlock(B("yellow small")))
    assert s.is_terminal() and s.winner == 0


def test_advanced_rule_ninth_block_still_wins() -> None:
    s = make_state([["block:red:large"], ["any"]], stack=ALL9[:8], advanced=True)
    s.apply_action(PlayBlock(C("block:red:large"), B("red large")))
    s.apply_action(Stood())
    assert s.is_terminal() and s.win_reason is WinReason.NINTH_BLOCK


def test_final_block_only_after_last_card() -> None:
    s = make_state([["any"], ["any"]], stack=("red small",), advanced=True)
    assert_illegal(s, FinalBlock(B("yellow small")), "R-BLOCKOUT-5")


# --------------------------------------------------------------------------- R-BLOCKOUT-6 and turn order


def test_reverse_three_players_r_blockout_6() -> None:
    s = make_state([["reverse", "pass", "any"], ["pass", "pass", "any"], ["reverse", "pass", "any"]])
    s.apply_action(PlayReverse())
    assert s.direction == -1 and s.current == 2
    s.apply_action(PlayPass())
    assert s.current == 1
    s.apply_action(PlayPass())
    assert s.current == 0
    s.apply_action(PlayPass())
    assert s.current == 2
    s.apply_action(PlayReverse())
    assert s.direction == 1 and s.current == 0


def test_reverse_two_players_acts_as_pass_r_blockout_6() -> None:
    a = make_state([["reverse", "pass", "any"], ["any", "pass"]])
    b = a.clone()
    a.apply_action(PlayReverse())
    b.apply_action(PlayPass())
    assert a.current == b.current == 1
    assert a.direction == b.direction == 1
    assert a.discard[-1] == REVERSE and b.discard[-1] == PASS
    a.apply_action(PlayPass())
    assert a.current == 0


def test_out_of_turn_is_illegal() -> None:
    s = make_state([["any", "pass"], ["any", "pass"], ["any"]], stack=("red small",))
    assert_illegal(s, PlayBlock(C("any"), B("yellow small")), "R-BLOCKOUT-6", player=1)
    assert_illegal(s, PlayPass(), "R-BLOCKOUT-6", player="p2")
    assert_illegal(s, Draw(), "R-BLOCKOUT-6", player=2)
    s.apply_action(PlayPass(), player=0)
    s.apply_action(PlayPass(), player="p2")
    with pytest.raises(ValueError):
        s.apply_action(PlayBlock(C("any"), B("yellow small")), player="nobody")


# --------------------------------------------------------------------------- JSON, undo, clone


def _play_some(seed: int, steps: int, players: int = 4, advanced: bool = False) -> BlockOutState:
    rng = random.Random(seed)
    s = BlockOutGame.create(players, advanced=advanced).new_initial_state(random.Random(seed + 1000))
    for _ in range(steps):
        if s.is_terminal():
            break
        if s.phase is Phase.COUNT:
            s.apply_stability_event(ev("counting", 0.0))
            s.apply_stability_event(ev("fell" if rng.random() < 0.3 else "stood", 3.0))
        else:
            s.apply_action(rng.choice(list(s.legal_actions())))
    return s


def test_json_round_trip() -> None:
    seen_phases = set()
    for seed in range(40):
        s = _play_some(seed, seed * 3, players=2 + seed % 5, advanced=seed % 2 == 1)
        data = s.to_json()
        text = json.dumps(data)
        back = BlockOutState.from_json(json.loads(text), rng=random.Random(0))
        assert back.to_json() == data
        assert data["stack"] == s.observation()["stack"]
        assert back.game == s.game
        seen_phases.add(s.phase)
    assert {Phase.ACTION, Phase.OVER} <= seen_phases


def test_json_round_trip_mid_count() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",), advanced=True)
    s.apply_action(PlayBlock(C("any"), B("red large")))
    s.apply_stability_event(ev("placed", 1.25))
    data = s.to_json()
    assert data["phase"] == "count" and data["count"] == {"final": False, "placed_t": 1.25, "counting_t": None}
    assert data["stack"] == [{"color": "red", "size": "small"}, {"color": "red", "size": "large"}]
    back = BlockOutState.from_json(json.loads(json.dumps(data)))
    assert back.to_json() == data
    back.apply_stability_event(ev("counting", 2.0))
    with pytest.raises(IllegalAction):
        back.apply_stability_event(ev("stood", 4.0))


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["stack"].append(dict(d["stack"][0])),  # a block twice
        lambda d: d["hands"][0].pop(),  # a card missing
        lambda d: d["hands"][0].append("pass"),  # a card too many
        lambda d: d.update(phase="count"),  # count missing
        lambda d: d.update(direction=2),
        lambda d: d.update(current=9),
        lambda d: d.update(winner=0),
        lambda d: d["stack"].append({"color": "green", "size": "small"}),
        lambda d: d.update(free=[]),
        lambda d: d.update(phase="restart"),  # restart with a stack
    ],
)
def test_from_json_rejects_inconsistent_state(mutate: Any) -> None:
    data = make_state([["any", "pass"], ["any"]], stack=("red small",)).to_json()
    mutate(data)
    with pytest.raises(ValueError):
        BlockOutState.from_json(data)


def test_actions_json_round_trip() -> None:
    s = make_state([["any", "pass", "reverse"], ["any"]], stack=("red small",))
    actions = list(s.legal_actions()) + [Draw(), Stood(), Fell(), FinalBlock(B("red small"))]
    for a in actions:
        assert action_from_json(json.loads(json.dumps(a.to_json()))) == a
    with pytest.raises(ValueError):
        action_from_json({"type": "juggle"})


def test_undo_restores_everything() -> None:
    rng = random.Random(4)
    s = BlockOutGame.create(3, advanced=True).new_initial_state(random.Random(44))
    snapshots = [frozen(s)]
    for _ in range(150):
        if s.is_terminal():
            break
        if s.phase is Phase.COUNT and s.count is not None and s.count.counting_t is None and rng.random() < 0.5:
            s.apply_stability_event(ev("counting", 1.0))
        elif s.phase is Phase.COUNT:
            s.apply_action(Fell() if rng.random() < 0.3 else Stood())
        else:
            s.apply_action(rng.choice(list(s.legal_actions())))
        snapshots.append(frozen(s))
    while s.history():
        snapshots.pop()
        s.undo()
        assert frozen(s) == snapshots[-1]
    with pytest.raises(IndexError):
        s.undo()


def test_clone_is_independent() -> None:
    s = _play_some(7, 10, players=3)
    c = s.clone()
    assert c.to_json() == s.to_json()
    while not c.is_terminal() and len(c.history()) < len(s.history()) + 20:
        c.apply_action(next(c.legal_actions()))
    assert c.to_json() != s.to_json()
    assert BlockOutState.from_json(s.to_json()).to_json() == s.to_json()


def test_str_is_readable() -> None:
    s = make_state([["any", "pass"], ["any"]], stack=("red small",))
    text = str(s)
    assert "p1 to move" in text and "red small" in text and "[any block]" in text
