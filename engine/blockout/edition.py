"""Block Out! edition data: blocks and cards (R-BLOCKOUT-1).

The edition is data, not code. The bundled file ``engine/editions/blockout.json`` holds::

    {"game": "blockout", "name": "default",
     "colors": ["yellow", "black", "red"], "sizes": ["small", "medium", "large"],
     "cards": [{"kind": "block", "color": "yellow", "size": "small", "count": 3},
               {"kind": "color", "color": "black", "count": 2},
               {"kind": "size", "size": "large", "count": 2},
               {"kind": "any", "count": 4},
               {"kind": "pass", "count": 6}, {"kind": "reverse", "count": 6}, ...]}

Loading validates it: exactly three colours and three sizes (nine distinct blocks), every
card naming only known colours and sizes, no card listed twice, and the rulebook's contents
line: 43 block cards and 12 action cards (Pass + Reverse).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterator

from engine.common import EditionError, load_edition_data, require

#: The rulebook's "Contents" line: 43 Block Cards, 12 Action Cards (R-BLOCKOUT-1).
BLOCK_CARDS_TOTAL = 43
ACTION_CARDS_TOTAL = 12


@dataclass(frozen=True, order=True)
class Block:
    """One of the nine blocks. JSON: ``{"color": "yellow", "size": "small"}`` (observation.md)."""

    color: str
    size: str

    def to_json(self) -> dict[str, str]:
        return {"color": self.color, "size": self.size}

    @classmethod
    def from_json(cls, data: Any) -> "Block":
        if not isinstance(data, dict) or not isinstance(data.get("color"), str) or not isinstance(
            data.get("size"), str
        ):
            raise ValueError(f"a block is {{'color': str, 'size': str}}, got {data!r}")
        return cls(data["color"], data["size"])

    def __str__(self) -> str:
        return f"{self.color} {self.size}"


class CardKind(str, enum.Enum):
    """The six card kinds of R-BLOCKOUT-1."""

    BLOCK = "block"  # one specific block
    COLOR = "color"  # any block of a colour
    SIZE = "size"  # any block of a size
    ANY = "any"  # any block
    PASS = "pass"
    REVERSE = "reverse"


_FIELDS = {
    CardKind.BLOCK: (True, True),
    CardKind.COLOR: (True, False),
    CardKind.SIZE: (False, True),
    CardKind.ANY: (False, False),
    CardKind.PASS: (False, False),
    CardKind.REVERSE: (False, False),
}


@dataclass(frozen=True, order=True)
class Card:
    """A card. Cards of the same kind, colour and size are interchangeable.

    The JSON form is a short string: ``"block:yellow:small"``, ``"color:black"``,
    ``"size:large"``, ``"any"``, ``"pass"``, ``"reverse"``.
    """

    kind: CardKind
    color: str | None = None
    size: str | None = None
    #: False for Pass and Reverse (the action cards); stored because play checks it constantly.
    is_block_card: bool = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        need_color, need_size = _FIELDS[self.kind]
        if need_color != (self.color is not None) or need_size != (self.size is not None):
            raise ValueError(f"a {self.kind.value} card takes color={need_color} size={need_size}")
        object.__setattr__(self, "is_block_card", self.kind not in (CardKind.PASS, CardKind.REVERSE))

    def allows(self, block: Block) -> bool:
        """Whether this block card lets a player place ``block`` (R-BLOCKOUT-1)."""
        if not self.is_block_card:
            return False
        if self.color is not None and self.color != block.color:
            return False
        return self.size is None or self.size == block.size

    def name(self) -> str:
        return ":".join(p for p in (self.kind.value, self.color, self.size) if p is not None)

    def to_json(self) -> str:
        return self.name()

    @classmethod
    def from_json(cls, text: Any) -> "Card":
        if not isinstance(text, str):
            raise ValueError(f"a card is a string such as 'color:black', got {text!r}")
        parts = text.split(":")
        try:
            kind = CardKind(parts[0])
        except ValueError:
            raise ValueError(f"unknown card kind in {text!r}") from None
        need_color, need_size = _FIELDS[kind]
        rest = parts[1:]
        if len(rest) != need_color + need_size:
            raise ValueError(f"malformed card {text!r}")
        color = rest.pop(0) if need_color else None
        size = rest.pop(0) if need_size else None
        return cls(kind, color, size)

    def __str__(self) -> str:
        if self.kind is CardKind.BLOCK:
            return f"[{self.color} {self.size}]"
        if self.kind is CardKind.COLOR:
            return f"[any {self.color}]"
        if self.kind is CardKind.SIZE:
            return f"[any {self.size}]"
        if self.kind is CardKind.ANY:
            return "[any block]"
        return f"[{self.kind.value}]"


PASS = Card(CardKind.PASS)
REVERSE = Card(CardKind.REVERSE)


@dataclass(frozen=True)
class BlockOutEdition:
    """Validated edition data. ``cards`` pairs each distinct card with its count."""

    name: str
    colors: tuple[str, ...]
    sizes: tuple[str, ...]
    cards: tuple[tuple[Card, int], ...]

    @cached_property
    def blocks(self) -> tuple[Block, ...]:
        """The nine blocks, colour-major in edition order."""
        return tuple(Block(c, s) for c in self.colors for s in self.sizes)

    def deck(self) -> list[Card]:
        """Every card of the game, in edition order (unshuffled)."""
        return [card for card, n in self.cards for _ in range(n)]

    def iter_card_types(self) -> Iterator[Card]:
        return (card for card, _ in self.cards)

    def check_block(self, block: Block) -> None:
        if block.color not in self.colors or block.size not in self.sizes:
            raise ValueError(f"{block} is not a block of edition {self.name!r}")

    def check_card(self, card: Card) -> None:
        if card.color is not None and card.color not in self.colors:
            raise ValueError(f"card {card.name()} names an unknown colour")
        if card.size is not None and card.size not in self.sizes:
            raise ValueError(f"card {card.name()} names an unknown size")

    @classmethod
    def from_data(cls, data: dict[str, Any], where: str = "edition") -> "BlockOutEdition":
        """Validate raw edition data; raise :class:`EditionError` on any inconsistency."""
        require(data.get("game") == "blockout", f"{where}: 'game' must be 'blockout'")
        name = data.get("name", "default")
        require(isinstance(name, str) and name != "", f"{where}: 'name' must be a non-empty string")
        colors = data.get("colors")
        sizes = data.get("sizes")
        for label, values in (("colors", colors), ("sizes", sizes)):
            require(
                isinstance(values, list) and all(isinstance(v, str) and v for v in values),
                f"{where}: '{label}' must be a list of names",
            )
            # R-BLOCKOUT-1: three colours x three sizes make the nine distinct blocks.
            require(len(values) == 3, f"{where}: '{label}' must have 3 entries, has {len(values)}")
            require(len(set(values)) == 3, f"{where}: '{label}' has duplicates: {values}")
            require(
                all(":" not in v for v in values), f"{where}: names in '{label}' may not contain ':'"
            )
        raw_cards = data.get("cards")
        require(isinstance(raw_cards, list) and raw_cards, f"{where}: 'cards' must be a non-empty list")
        cards: list[tuple[Card, int]] = []
        seen: set[Card] = set()
        for i, entry in enumerate(raw_cards):
            at = f"{where}: cards[{i}]"
            require(isinstance(entry, dict), f"{at} must be an object")
            try:
                kind = CardKind(entry.get("kind"))
            except ValueError:
                raise EditionError(
                    f"{at}: unknown kind {entry.get('kind')!r}; use one of "
                    + ", ".join(k.value for k in CardKind)
                ) from None
            need_color, need_size = _FIELDS[kind]
            extra = set(entry) - {"kind", "count", "color", "size"}
            require(not extra, f"{at}: unknown fields {sorted(extra)}")
            require(
                ("color" in entry) == need_color,
                f"{at}: a {kind.value} card {'needs' if need_color else 'takes no'} 'color'",
            )
            require(
                ("size" in entry) == need_size,
                f"{at}: a {kind.value} card {'needs' if need_size else 'takes no'} 'size'",
            )
            if need_color:
                require(entry["color"] in colors, f"{at}: unknown colour {entry['color']!r}")
            if need_size:
                require(entry["size"] in sizes, f"{at}: unknown size {entry['size']!r}")
            count = entry.get("count")
            require(
                isinstance(count, int) and not isinstance(count, bool) and count >= 0,
                f"{at}: 'count' must be a non-negative integer",
            )
            card = Card(kind, entry.get("color"), entry.get("size"))
            require(card not in seen, f"{at}: card {card.name()} is listed twice")
            seen.add(card)
            cards.append((card, count))
        n_block = sum(n for c, n in cards if c.is_block_card)
        n_action = sum(n for c, n in cards if not c.is_block_card)
        require(
            n_block == BLOCK_CARDS_TOTAL,
            f"{where}: block cards total {n_block}, the game has {BLOCK_CARDS_TOTAL}",
        )
        require(
            n_action == ACTION_CARDS_TOTAL,
            f"{where}: Pass and Reverse cards total {n_action}, the game has {ACTION_CARDS_TOTAL}",
        )
        return cls(name, tuple(colors), tuple(sizes), tuple(cards))


def load_edition(path: str | Path | None = None) -> BlockOutEdition:
    """Load and validate the bundled default edition, or the file at ``path``."""
    if path is None:
        return _bundled_edition()
    data = load_edition_data("blockout", path)
    return BlockOutEdition.from_data(data, str(path) if path is not None else "blockout.json")


@lru_cache(maxsize=1)
def _bundled_edition() -> BlockOutEdition:
    # Editions are immutable, so the bundled file is read and validated once per process.
    return BlockOutEdition.from_data(load_edition_data("blockout"), "blockout.json")
