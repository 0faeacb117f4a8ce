"""Bloxo edition data: colours with their shapes, the 40 cards, the setup numbers.

A card is 2x2 quadrants (R-BLOXO-1). Quadrants are always listed in the order of
``observation.md``: NW, NE, SE, SW, i.e. starting at the quadrant nearest the far-left
corner and going clockwise as seen from above. A card's quadrants in the edition file
are its appearance at rotation 0.

Rotation (R-BLOXO-2) is counted in clockwise quarter turns as seen from above, 0..3.
Turning a card one quarter clockwise carries the NW quadrant to NE, NE to SE, SE to SW
and SW to NW, so the quadrant seen at position ``i`` after ``r`` turns is the card's own
quadrant ``(i - r) mod 4`` (see :func:`rotate`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.common import load_edition_data, require

NW, NE, SE, SW = 0, 1, 2, 3
QUADRANT_NAMES = ("NW", "NE", "SE", "SW")

Colours = tuple[str, str, str, str]


def rotate(quadrants: tuple[str, ...], rotation: int) -> Colours:
    """The quadrants as seen after ``rotation`` clockwise quarter turns (R-BLOXO-2)."""
    r = rotation % 4
    return tuple(quadrants[(i - r) % 4] for i in range(4))  # type: ignore[return-value]


class CardKind(str, enum.Enum):
    """The three card kinds of R-BLOXO-1."""

    ONE = "one"  # one colour
    HALVES = "halves"  # two colours in two side-by-side halves
    FOUR = "four"  # four different colours


def card_kind(quadrants: tuple[str, ...]) -> CardKind | None:
    """The R-BLOXO-1 kind of a quadrant arrangement, or None if no card looks like that.

    Diagonal pairs (``a b a b``) and three-and-one arrangements are not cards, and
    neither is any arrangement with exactly three different colours.
    """
    distinct = len(set(quadrants))
    if distinct == 1:
        return CardKind.ONE
    if distinct == 4:
        return CardKind.FOUR
    if distinct == 2:
        q = quadrants
        # Halves: two neighbouring quadrants share one colour, the other two the other.
        if (q[NW] == q[NE] and q[SE] == q[SW]) or (q[NE] == q[SE] and q[SW] == q[NW]):
            return CardKind.HALVES
    return None


def design_key(quadrants: tuple[str, ...], order: dict[str, int]) -> Colours:
    """The rotation-independent name of a card face: its smallest rotation.

    Two physical cards with the same key are indistinguishable on the table.
    """
    return min((rotate(quadrants, r) for r in range(4)), key=lambda q: tuple(order[c] for c in q))


@dataclass(frozen=True)
class Colour:
    """A card colour and the shape always printed in it (R-BLOXO-1)."""

    name: str
    shape: str
    letter: str


@dataclass(frozen=True)
class CardSpec:
    """One physical card: its id, its quadrants at rotation 0 and derived facts."""

    id: str
    quadrants: Colours
    kind: CardKind
    design: Colours
    # Distinct appearances over the four rotations: (rotation, seen quadrants). A
    # one-colour card has one; every other legal card has four.
    appearances: tuple[tuple[int, Colours], ...]

    def seen(self, rotation: int) -> Colours:
        """The quadrants seen from above after ``rotation`` clockwise quarter turns."""
        return rotate(self.quadrants, rotation)


@dataclass(frozen=True)
class Edition:
    """A validated Bloxo edition (see ``engine/editions/bloxo.json``)."""

    name: str
    colors: tuple[Colour, ...]
    cards: tuple[CardSpec, ...]
    hand_size: int
    pass_penalty: int
    setup_discards: dict[int, int]
    note: str = ""
    _by_id: dict[str, CardSpec] = field(default_factory=dict, repr=False, compare=False)
    _by_colour: dict[str, Colour] = field(default_factory=dict, repr=False, compare=False)
    # appearance (quadrants seen) -> design, for table-mode identification
    _by_appearance: dict[Colours, Colours] = field(
        default_factory=dict, repr=False, compare=False
    )
    _design_cards: dict[Colours, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    def card(self, card_id: str) -> CardSpec:
        """The card with ``card_id``; KeyError if the edition has none."""
        return self._by_id[card_id]

    def has_card(self, card_id: str) -> bool:
        return card_id in self._by_id

    def colour(self, name: str) -> Colour:
        """The colour called ``name``; KeyError if unknown."""
        return self._by_colour[name]

    def has_colour(self, name: str) -> bool:
        return name in self._by_colour

    @property
    def card_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cards)

    def identify(self, seen: tuple[str, ...]) -> Colours | None:
        """The design of a card seen with quadrants ``seen`` (NW, NE, SE, SW), or None
        when no card of the edition looks like that in any rotation. Use
        :func:`rotation_for` for the rotation of a particular card."""
        return self._by_appearance.get(tuple(seen))  # type: ignore[arg-type]

    def cards_of_design(self, design: Colours) -> tuple[str, ...]:
        """Ids of every physical card with this design, in edition order."""
        return self._design_cards.get(design, ())

    def colour_order(self) -> dict[str, int]:
        return {c.name: i for i, c in enumerate(self.colors)}


def parse_edition(data: dict[str, Any], where: str = "edition") -> Edition:
    """Validate raw edition data and build an :class:`Edition` (raises EditionError)."""
    require(data.get("game") == "bloxo", f"{where}: 'game' must be \"bloxo\", got {data.get('game')!r}")
    raw_colours = data.get("colors")
    require(isinstance(raw_colours, list), f"{where}: 'colors' must be a list of colours")
    colours: list[Colour] = []
    for i, rc in enumerate(raw_colours):
        require(isinstance(rc, dict), f"{where}: colors[{i}] must be an object with name and shape")
        name, shape = rc.get("name"), rc.get("shape")
        require(isinstance(name, str) and name == name.lower() and name != "",
                f"{where}: colors[{i}] needs a lower-case 'name'")
        require(isinstance(shape, str) and shape == shape.lower() and shape != "",
                f"{where}: colour {name!r} needs a lower-case 'shape'")
        letter = rc.get("letter", name[0].upper())
        require(isinstance(letter, str) and len(letter) == 1,
                f"{where}: colour {name!r}: 'letter' must be one character")
        colours.append(Colour(name, shape, letter))
    # R-BLOXO-1: four colours, each always printed with its own shape.
    require(len(colours) == 4, f"{where}: Bloxo has exactly 4 colours (R-BLOXO-1), found {len(colours)}")
    names = [c.name for c in colours]
    require(len(set(names)) == 4, f"{where}: colour names must be different, got {names}")
    shapes = [c.shape for c in colours]
    require(len(set(shapes)) == 4,
            f"{where}: each colour must have its own shape (colour-to-shape pairing), got {shapes}")
    letters = [c.letter for c in colours]
    require(len(set(letters)) == 4, f"{where}: colour letters must be different, got {letters}")
    order = {n: i for i, n in enumerate(names)}

    rules = data.get("rules", {})
    require(isinstance(rules, dict), f"{where}: 'rules' must be an object")
    hand_size = rules.get("hand_size", 6)
    pass_penalty = rules.get("pass_penalty", 4)
    require(isinstance(hand_size, int) and hand_size > 0, f"{where}: rules.hand_size must be a positive integer")
    require(isinstance(pass_penalty, int) and pass_penalty >= 0,
            f"{where}: rules.pass_penalty must be a non-negative integer")
    raw_discards = rules.get("setup_discards", {"2": 1, "3": 0, "4": 3})
    require(isinstance(raw_discards, dict), f"{where}: rules.setup_discards must map player counts to cards")
    discards: dict[int, int] = {}
    for k, v in raw_discards.items():
        require(str(k).isdigit() and isinstance(v, int) and v >= 0,
                f"{where}: rules.setup_discards entry {k!r}: {v!r} is not a player count and a card count")
        discards[int(k)] = v
    require(sorted(discards) == [2, 3, 4],
            f"{where}: rules.setup_discards must give 2, 3 and 4 players (R-BLOXO-7), got {sorted(discards)}")

    raw_cards = data.get("cards")
    require(isinstance(raw_cards, list), f"{where}: 'cards' must be a list")
    require(len(raw_cards) == 40, f"{where}: Bloxo has 40 cards, the file lists {len(raw_cards)}")
    cards: list[CardSpec] = []
    seen_ids: set[str] = set()
    for i, rc in enumerate(raw_cards):
        require(isinstance(rc, dict), f"{where}: cards[{i}] must be an object with id and quadrants")
        cid = rc.get("id")
        require(isinstance(cid, str) and cid != "", f"{where}: cards[{i}] needs a non-empty string 'id'")
        require(cid not in seen_ids, f"{where}: card id {cid!r} appears twice")
        seen_ids.add(cid)
        quads = rc.get("quadrants")
        require(isinstance(quads, list) and len(quads) == 4,
                f"{where}: card {cid}: 'quadrants' must list 4 colours (NW, NE, SE, SW)")
        for q in quads:
            require(q in order, f"{where}: card {cid}: unknown colour {q!r} (known: {', '.join(names)})")
        qt: Colours = tuple(quads)  # type: ignore[assignment]
        kind = card_kind(qt)
        require(kind is not None,
                f"{where}: card {cid} {list(qt)} is not one colour, two side-by-side halves or four "
                "different colours (R-BLOXO-1)")
        declared = rc.get("kind")
        if declared is not None:
            require(declared == kind.value,  # type: ignore[union-attr]
                    f"{where}: card {cid} is declared {declared!r} but its quadrants make it {kind.value!r}")  # type: ignore[union-attr]
        appearances: list[tuple[int, Colours]] = []
        for r in range(4):
            look = rotate(qt, r)
            if all(look != a for _, a in appearances):
                appearances.append((r, look))
        cards.append(CardSpec(cid, qt, kind, design_key(qt, order), tuple(appearances)))  # type: ignore[arg-type]

    for n, d in discards.items():
        left = len(cards) - d - n * hand_size - 1
        require(left >= 0, f"{where}: {n} players need {n * hand_size + d + 1} cards for setup, the deck has 40")

    edition = Edition(
        name=str(data.get("name", "bloxo")),
        colors=tuple(colours),
        cards=tuple(cards),
        hand_size=hand_size,
        pass_penalty=pass_penalty,
        setup_discards=discards,
        note=str(data.get("note", "")),
    )
    edition._by_id.update({c.id: c for c in cards})
    edition._by_colour.update({c.name: c for c in colours})
    for c in cards:
        edition._design_cards.setdefault(c.design, ())
        edition._design_cards[c.design] = edition._design_cards[c.design] + (c.id,)
        for _, look in c.appearances:
            # Copies of a design may be listed in different orientations, so only the
            # design is stored here; each card's rotation comes from rotation_for().
            edition._by_appearance[look] = c.design
    return edition


def load_edition(path: str | Path | None = None) -> Edition:
    """Load and validate the bundled Bloxo edition, or the file at ``path``."""
    where = str(path) if path is not None else "bundled edition bloxo.json"
    return parse_edition(load_edition_data("bloxo", path), where)


def rotation_for(card: CardSpec, seen: tuple[str, ...]) -> int | None:
    """The smallest rotation that makes ``card`` look like ``seen``, or None."""
    for r, look in card.appearances:
        if look == tuple(seen):
            return r
    return None
