"""Bloxo table mode: name the action that turns the known tableau into a new observation.

:func:`infer` compares the state's tableau with a stable ``bloxo`` observation (see
``observation.md``; the vision layer has already snapped every card to a grid position)
and returns a :class:`BloxoVerdict`. It never changes the state: the caller applies
``verdict.action`` once the table has accepted it (as R-BLOX-15 does for Blox).

Hands are unknown in table mode, so a new card's identity is *implied* by its quadrants:
the engine finds the edition design that looks like that in some rotation and checks a
copy is still unplayed (with full information: that the player holds one). The card id
is reported in ``implied_cards``.

Each kind of change has its own verdict, told apart by :class:`TableChange`:

=====================  ==============  ============================================
change                 verdict kind    meaning
=====================  ==============  ============================================
``none``               no_change       the tableau is as before (or not stable)
``placed``             action          one new card, legal: the placement and points
``redraw``             action          start card returned and redrawn (R-BLOXO-7)
``redraw_refused``     illegal         start card replaced when R-BLOXO-7 forbids it
``removed``            unrecognised    a card disappeared or was swapped for another
``moved``              unrecognised    a card reappeared elsewhere or turned in place
``two_new``            unrecognised    two or more new cards at once
``not_adjacent``       illegal         the new card touches no card (R-BLOXO-3)
``mismatched_edge``    illegal         touching quadrants differ (R-BLOXO-3)
``unknown_card``       unrecognised    no card of the edition looks like that
``no_copy_left``       unrecognised    every card of that design is already played
``not_in_hand``        unrecognised    (full information) the player holds no such card
``game_over``          illegal         the game has ended (R-BLOXO-6)
``bad_observation``    unrecognised    malformed observation or shape not of its colour
=====================  ==============  ============================================
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.bloxo.actions import Place, Redraw
from engine.bloxo.edition import Colours, Edition, rotation_for
from engine.bloxo.grid import Pos, edge_conflicts, touches
from engine.bloxo.state import BloxoState
from engine.common import IllegalAction, Verdict, VerdictKind


class TableChange(str, enum.Enum):
    NONE = "none"
    PLACED = "placed"
    REDRAW = "redraw"
    REDRAW_REFUSED = "redraw_refused"
    REMOVED = "removed"
    MOVED = "moved"
    TWO_NEW = "two_new"
    NOT_ADJACENT = "not_adjacent"
    MISMATCHED_EDGE = "mismatched_edge"
    UNKNOWN_CARD = "unknown_card"
    NO_COPY_LEFT = "no_copy_left"
    NOT_IN_HAND = "not_in_hand"
    GAME_OVER = "game_over"
    BAD_OBSERVATION = "bad_observation"


@dataclass(frozen=True)
class BloxoVerdict(Verdict):
    """A :class:`Verdict` that also says which kind of change was seen."""

    change: TableChange = TableChange.NONE

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["change"] = self.change.value
        return out


class ObservationError(ValueError):
    """A ``bloxo`` observation that does not follow observation.md."""


def parse_observation(edition: Edition, observation: Mapping[str, Any]
                      ) -> tuple[dict[Pos, Colours], bool, set[Pos]]:
    """Read an observation (the full object with ``state``, or just the state).

    Returns (position -> quadrant colours, stable, occluded positions). Shapes must be
    the shape of their colour (R-BLOXO-1); a shape of null is accepted as unread.
    """
    if not isinstance(observation, Mapping):
        raise ObservationError("an observation must be a JSON object")
    if "state" in observation:
        if observation.get("game", "bloxo") != "bloxo":
            raise ObservationError(f"observation is for game {observation.get('game')!r}, not bloxo")
        state = observation["state"]
        stable = bool(observation.get("stable", True))
        occluded_raw = observation.get("occluded") or []
    else:
        state, stable, occluded_raw = observation, True, []
    if not isinstance(state, Mapping) or not isinstance(state.get("cards"), list):
        raise ObservationError("a bloxo state needs a 'cards' list")
    occluded: set[Pos] = set()
    for o in occluded_raw:
        if isinstance(o, (list, tuple)) and len(o) == 2 and all(isinstance(v, int) for v in o):
            occluded.add((o[0], o[1]))
    looks: dict[Pos, Colours] = {}
    for i, card in enumerate(state["cards"]):
        if not isinstance(card, Mapping):
            raise ObservationError(f"cards[{i}] must be an object")
        at = card.get("at")
        if not (isinstance(at, (list, tuple)) and len(at) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in at)):
            raise ObservationError(f"cards[{i}]: 'at' must be two whole grid numbers, got {at!r}")
        pos = (at[0], at[1])
        if pos in looks:
            raise ObservationError(f"two cards seen at {list(pos)}")
        quads = card.get("quadrants")
        if not (isinstance(quads, list) and len(quads) == 4):
            raise ObservationError(f"cards[{i}]: 'quadrants' must list 4 [colour, shape] pairs")
        colours = []
        for q in quads:
            if not (isinstance(q, (list, tuple)) and len(q) == 2):
                raise ObservationError(f"cards[{i}]: quadrant {q!r} is not a [colour, shape] pair")
            colour, shape = q
            if not (isinstance(colour, str) and edition.has_colour(colour)):
                raise ObservationError(f"cards[{i}] at {list(pos)}: unknown colour {colour!r}")
            expected = edition.colour(colour).shape
            if shape is not None and shape != expected:
                raise ObservationError(f"card at {list(pos)} shows a {colour} {shape}; {colour} quadrants "
                                       f"show a {expected} (R-BLOXO-1)")
            colours.append(colour)
        looks[pos] = tuple(colours)  # type: ignore[assignment]
    return looks, stable, occluded


def _verdict(kind: VerdictKind, change: TableChange, why: str, **kw: Any) -> BloxoVerdict:
    return BloxoVerdict(kind=kind, why=why, change=change, **kw)


def infer(state: BloxoState, observation: Mapping[str, Any]) -> BloxoVerdict:
    """Name the single action that explains ``observation`` after ``state``.

    Works for table-mode and full-information states alike; never changes ``state``.
    A card seen missing at a position listed in ``occluded`` is not counted as removed.
    """
    ed = state.edition
    try:
        seen, stable, occluded = parse_observation(ed, observation)
    except ObservationError as exc:
        return _verdict(VerdictKind.UNRECOGNISED, TableChange.BAD_OBSERVATION, str(exc))
    if not stable:
        return _verdict(VerdictKind.NO_CHANGE, TableChange.NONE, "observation not stable; nothing committed")
    before = state.looks()
    removed = [p for p in before if p not in seen and p not in occluded]
    changed = [p for p in before if p in seen and seen[p] != before[p]]
    added = [p for p in seen if p not in before]
    if not (removed or changed or added):
        return _verdict(VerdictKind.NO_CHANGE, TableChange.NONE, "the tableau is unchanged")
    player = state.current_player()
    if state.is_terminal():
        return _verdict(VerdictKind.ILLEGAL, TableChange.GAME_OVER,
                        f"the game has ended ({state.end_reason}) but the tableau changed", rule="R-BLOXO-6")

    if changed == [(0, 0)] and not removed and not added and len(before) == 1:
        return _infer_redraw(state, seen[(0, 0)])

    if removed or changed:
        return _removed_or_moved(state, seen, removed, changed, added)

    if len(added) > 1:
        candidates = []
        for p in added:
            place = _implied_place(state, p, seen[p])
            if isinstance(place, Place):
                candidates.append(place)
        return _verdict(VerdictKind.UNRECOGNISED, TableChange.TWO_NEW,
                        f"{len(added)} new cards at {', '.join(str(list(p)) for p in added)}; "
                        "a turn lays one card", player=player, candidates=tuple(candidates))

    at = added[0]
    place = _implied_place(state, at, seen[at])
    if not isinstance(place, Place):
        return place
    implied = (place.card,)
    looks = state.looks()
    if not touches(looks, at):
        return _verdict(VerdictKind.ILLEGAL, TableChange.NOT_ADJACENT,
                        f"the new card at {list(at)} is not orthogonally next to any card",
                        rule="R-BLOXO-3", player=player, action=place, implied_cards=implied)
    conflicts = edge_conflicts(looks, at, seen[at])
    if conflicts:
        return _verdict(VerdictKind.ILLEGAL, TableChange.MISMATCHED_EDGE,
                        f"the new card at {list(at)} does not match: "
                        + "; ".join(c.sentence() for c in conflicts),
                        rule="R-BLOXO-3", player=player, action=place, implied_cards=implied)
    try:
        points = state.points_for(place)
    except IllegalAction as exc:  # anything the checks above did not foresee
        return _verdict(VerdictKind.ILLEGAL, TableChange.MISMATCHED_EDGE, exc.why, rule=exc.rule,
                        player=player, action=place, implied_cards=implied)
    return _verdict(VerdictKind.ACTION, TableChange.PLACED,
                    f"{player} placed {place.card} at {list(at)} rotation {place.rotation} "
                    f"for {points} points", player=player, action=place, implied_cards=implied,
                    points=points)


def _implied_place(state: BloxoState, at: Pos, seen: Colours) -> Place | BloxoVerdict:
    """The placement that shows ``seen`` at ``at``, or the verdict saying why none can."""
    ed = state.edition
    player = state.current_player()
    design = ed.identify(seen)
    if design is None:
        return _verdict(VerdictKind.UNRECOGNISED, TableChange.UNKNOWN_CARD,
                        f"no card of the edition shows {list(seen)} (NW, NE, SE, SW) at {list(at)}",
                        rule="R-BLOXO-1", player=player)
    copies = ed.cards_of_design(design)
    if state.hands is not None and state.current is not None:
        hand = state.hands[state.current]
        usable = [c for c in copies if c in hand]
        if not usable:
            return _verdict(VerdictKind.UNRECOGNISED, TableChange.NOT_IN_HAND,
                            f"{player} holds no card showing {list(seen)}", player=player)
    else:
        played = state.played_cards()
        usable = [c for c in copies if c not in played]
        if not usable:
            return _verdict(VerdictKind.UNRECOGNISED, TableChange.NO_COPY_LEFT,
                            f"all {len(copies)} cards showing {list(seen)} are already on the table",
                            rule="R-BLOXO-1", player=player)
    card = usable[0]
    rotation = rotation_for(ed.card(card), seen)
    assert rotation is not None
    return Place(card, at, rotation)


def _infer_redraw(state: BloxoState, seen: Colours) -> BloxoVerdict:
    ed = state.edition
    design = ed.identify(seen)
    if design is None:
        return _verdict(VerdictKind.UNRECOGNISED, TableChange.UNKNOWN_CARD,
                        f"no card of the edition shows {list(seen)} (NW, NE, SE, SW) at [0, 0]",
                        rule="R-BLOXO-1")
    if state.draw_pile is not None and state.draw_pile:
        top = ed.card(state.draw_pile[0])
        card = top.id if top.design == design else None
    else:
        played = state.played_cards()
        card = next((c for c in ed.cards_of_design(design) if c not in played), None)
    if card is None:
        why = ("the new start card is not the top of the draw pile" if state.draw_pile is not None
               else f"all cards showing {list(seen)} are already on the table")
        return _verdict(VerdictKind.ILLEGAL, TableChange.REDRAW_REFUSED, why, rule="R-BLOXO-7")
    rotation = rotation_for(ed.card(card), seen)
    assert rotation is not None
    action = Redraw(card, rotation)
    try:
        state.check(action)
    except IllegalAction as exc:
        return _verdict(VerdictKind.ILLEGAL, TableChange.REDRAW_REFUSED,
                        f"the start card was replaced: {exc.why}", rule=exc.rule, action=action)
    return _verdict(VerdictKind.ACTION, TableChange.REDRAW, f"one-colour start card redrawn as {card}",
                    action=action, implied_cards=(card,))


def _removed_or_moved(state: BloxoState, seen: Mapping[Pos, Colours], removed: list[Pos],
                      changed: list[Pos], added: list[Pos]) -> BloxoVerdict:
    ed = state.edition
    before = state.looks()
    player = state.current_player()
    new_designs = {p: ed.identify(seen[p]) for p in added}
    for p in removed:
        design = ed.card(state.tableau[p].card).design
        for q, d in new_designs.items():
            if d == design:
                return _verdict(VerdictKind.UNRECOGNISED, TableChange.MOVED,
                                f"the card at {list(p)} ({state.tableau[p].card}) was moved to {list(q)}; "
                                "laid cards stay where they are", player=player)
    for p in changed:
        if ed.identify(seen[p]) == ed.card(state.tableau[p].card).design:
            return _verdict(VerdictKind.UNRECOGNISED, TableChange.MOVED,
                            f"the card at {list(p)} ({state.tableau[p].card}) was turned in place",
                            player=player)
    gone = removed + changed
    what = "; ".join(
        f"the card at {list(p)} ({state.tableau[p].card}, {list(before[p])}) "
        + ("is gone" if p in removed else f"was replaced by {list(seen[p])}")
        for p in gone
    )
    return _verdict(VerdictKind.UNRECOGNISED, TableChange.REMOVED, what + "; laid cards stay on the table",
                    player=player)
