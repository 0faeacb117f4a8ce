"""Table mode: name and check the placement that turned one sheet into another.

The camera (or the web page) reports a player's sheet before and after they drew.
:func:`judge_sheet_change` finds every way a rolled face, in any orientation and
position, covers exactly the newly drawn squares, replays each candidate on a copy of
the state and compares the resulting sheet with what was reported:

* one candidate is legal and reproduces the sheet exactly -> ``ACTION``;
* the new squares are a rolled shape but something is wrong (placement rule, circle
  versus cross, circle square, gaps) -> ``ILLEGAL`` naming the ruling and the placement
  the player most plausibly attempted;
* the new squares are no rolled shape, an already filled square changed, or the
  sheets cannot be read -> ``UNRECOGNISED`` (with the candidates considered).

The engine state itself is never modified (R-BLOX-15 style: it advances only when the
caller applies the verdict's action).
"""

from __future__ import annotations

from typing import Any

from engine.bloxx.sheet import CIRCLE, CROSS, EMPTY, GAP, Sheet, SheetFormatError
from engine.bloxx.state import BloxxState, Forfeit, Place
from engine.common import IllegalAction, Verdict, VerdictKind


def _cells(cells: Any) -> str:
    return ", ".join(f"({r},{c})" for r, c in sorted(cells))


def judge_sheet_change(
    state: BloxxState, player: int, after: Any, before: Any | None = None
) -> Verdict:
    """Judge ``player``'s sheet going from ``before`` to ``after``.

    ``before``/``after`` are ``bloxx`` observation states (``{"sheet": rows}``) or row
    lists. ``before`` defaults to the engine's record of the sheet; if given, it must
    agree with that record.

    When nothing changed and ``player`` may act but no rolled shape fits their sheet,
    the verdict is ``NO_CHANGE`` carrying :class:`Forfeit` as its action (R-BLOXX-6), so
    the table can record the forced forfeit.
    """
    name = state.game.players[player]
    geo = state.edition.geometry
    record = state.sheets[player]
    try:
        new = Sheet.from_rows(geo, after)
        old = record if before is None else Sheet.from_rows(geo, before)
    except SheetFormatError as exc:
        return Verdict(VerdictKind.UNRECOGNISED, name, why=f"unreadable sheet: {exc}")
    if old != record:
        return Verdict(
            VerdictKind.UNRECOGNISED, name,
            why="the sheet before does not match the engine's record of "
            f"{name}'s sheet at squares {_cells(c for c, _, _ in record.diff(old))}",
        )
    if new == old:
        if (
            player in state.pending_players()
            and state.took[player] is None
            and not state.can_place(player)
        ):
            return Verdict(
                VerdictKind.NO_CHANGE, name, action=Forfeit(player), rule="R-BLOXX-6",
                why=f"neither rolled shape fits {name}'s sheet; {name} forfeits the turn",
            )
        return Verdict(VerdictKind.NO_CHANGE, name)

    changes = old.diff(new)
    rewritten = [(c, a, b) for c, a, b in changes if a != EMPTY]
    if rewritten:
        # A filled square never changes: drawn squares stay (R-BLOXX-3), gaps are never
        # filled (R-BLOXX-4). A camera misread is the likelier story, so do not guess.
        return Verdict(
            VerdictKind.UNRECOGNISED, name,
            rule="R-BLOXX-4" if any(a == GAP for _, a, _ in rewritten) else "R-BLOXX-3",
            why="already filled squares changed: "
            + "; ".join(f"({r},{c}) {a!r}->{b!r}" for (r, c), a, b in rewritten),
        )
    drawn = {c for c, _, b in changes if b in (CROSS, CIRCLE)}
    gaps = {c for c, _, b in changes if b == GAP}
    circles = {c for c, _, b in changes if b == CIRCLE}
    if not drawn:
        return Verdict(
            VerdictKind.UNRECOGNISED, name, rule="R-BLOXX-4",
            why=f"gaps {_cells(gaps)} appeared without a shape being drawn",
        )
    if state.roll is None:
        return Verdict(
            VerdictKind.ILLEGAL, name, rule="R-BLOXX-6",
            why=f"{name} drew squares {_cells(drawn)} before the dice were rolled",
        )

    candidates = _shape_matches(state, player, drawn)
    if not candidates:
        rolled = ", ".join(f"{d.name} {f}" for d, f in zip(state.edition.dice, state.roll))
        return Verdict(
            VerdictKind.UNRECOGNISED, name,
            why=f"the new squares {_cells(drawn)} are not a rolled shape ({rolled})",
        )

    judged = []
    for place in candidates:
        trial = state.clone()
        try:
            trial.apply_action(place)
        except IllegalAction as exc:
            judged.append((place, exc.rule, exc.why))
            continue
        expect = trial.sheets[player]
        if expect == new:
            return Verdict(
                VerdictKind.ACTION, name, action=place,
                points=trial.score(player).total - state.score(player).total,
            )
        judged.append((place, *_mark_or_gap_problem(state, place, expect, new, circles)))

    # The most plausible attempt: a placement that broke only the marks or the gaps,
    # then the first one the placement rules rejected.
    order = {"R-BLOXX-4": 0, "R-BLOXX-5": 1, "R-BLOXX-2": 2}
    judged.sort(key=lambda j: order.get(j[1], 3))
    place, rule, why = judged[0]
    return Verdict(
        VerdictKind.ILLEGAL, name, action=place, rule=rule, why=why,
        candidates=tuple(p for p, _, _ in judged),
    )


def _shape_matches(state: BloxxState, player: int, drawn: set[tuple[int, int]]) -> list[Place]:
    """Placements of a rolled face covering exactly ``drawn``, one per (die, circle)."""
    geo = state.edition.geometry
    mask = geo.mask_of(drawn)
    found: list[Place] = []
    for die, face_name in zip(state.edition.dice, state.roll or ()):
        for p in state.edition.placements(face_name):
            if p.mask == mask:
                found.append(Place(player, die.name, face_name, p.orientation, p.row, p.col))
    return found


def _mark_or_gap_problem(
    state: BloxxState, place: Place, expect: Sheet, seen: Sheet, circles: set[tuple[int, int]]
) -> tuple[str, str]:
    """Why a legal placement's sheet ``expect`` differs from the reported ``seen``."""
    player = place.player
    _, circle = state.resolve(place)
    if expect.drawn == seen.drawn and expect.circles != seen.circles:
        if not state.marks_circle(player, place.die):
            return (
                "R-BLOXX-5",
                f"{state.game.players[player]} took the active player's {place.die} die and "
                f"must draw a cross instead of the circle",
            )
        if not circles:
            return "R-BLOXX-5", f"the circle of {place.face} at {circle} was drawn as a cross"
        return (
            "R-BLOXX-2",
            f"the circle of {place.face} belongs at {circle}, not {_cells(circles)}",
        )
    geo = state.edition.geometry
    missing = geo.cells_of(expect.gaps & ~seen.gaps)
    extra = geo.cells_of(seen.gaps & ~expect.gaps)
    parts = []
    if missing:
        parts.append(f"squares {_cells(missing)} under the shape must be coloured as gaps at once")
    if extra:
        parts.append(f"squares {_cells(extra)} are not gaps")
    return "R-BLOXX-4", "; ".join(parts) or "the sheet does not match the placement"
