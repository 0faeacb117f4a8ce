"""Events in plain words, for the terminal and the status page."""

from __future__ import annotations

from typing import Any


def _pos(p: Any) -> str:
    return f"[{p[0]},{p[1]}]" if isinstance(p, (list, tuple)) and len(p) == 2 else str(p)


def _cards(action: dict[str, Any]) -> str:
    cards = list(action.get("cards", []))
    if action.get("joker"):
        cards.append(f"Joker as {action['joker']}")
    return ", ".join(cards) if cards else "no cards"


def describe_action(action: dict[str, Any]) -> str:
    kind = action.get("type")
    if kind == "place":
        return f"places a figure from {action['entrance']} on {_pos(action['to'])} ({_cards(action)})"
    if kind == "move":
        return f"moves {_pos(action['from'])} -> {_pos(action['to'])} ({_cards(action)})"
    if kind == "destroy":
        return f"destroys the tower on {_pos(action['to'])} from {_pos(action['from'])} ({_cards(action)})"
    if kind == "build":
        return f"builds a {len(action['blocks'])}-tower on {_pos(action['at'])}: {'/'.join(action['blocks'])} ({_cards(action)})"
    if kind == "knock":
        return f"knocks off the figure on {_pos(action['to'])} from {_pos(action['from'])} ({_cards(action)})"
    if kind == "block":  # Block Out!
        block = action.get("block", {})
        return f"places the {block.get('color')} {block.get('size')} block"
    if kind in ("pass", "reverse"):
        return f"plays {kind.capitalize()}"
    if kind == "out":
        return "has played their last card"
    if kind == "exchange":
        extra = " and turns the Joker face up" if action.get("reactivate_joker") else ""
        return f"exchanges {len(action.get('cards', []))} card(s){extra}"
    return str(action)


#: event kinds Bloxx! words its own way; corrections, faults and the end read alike in every game
BLOXX_OWN_KINDS = ("action", "illegal", "unrecognised", "phase")


def describe_event(event: dict[str, Any]) -> str:
    """One line a player understands."""
    if event.get("game") == "bloxx" and event.get("kind") in BLOXX_OWN_KINDS:
        from service.referees.bloxx import describe_bloxx_event

        return describe_bloxx_event(event)
    seq = f"#{event.get('seq', '?'):>4} t={event.get('t', 0):8.1f}s"
    kind = event.get("kind")
    who = event.get("player", "")
    if kind == "action":
        points = f" +{event['points']}" if event.get("points") else ""
        return f"{seq}  {who} {describe_action(event.get('action', {}))}{points}"
    if kind == "illegal":
        return f"{seq}  ILLEGAL ({event.get('rule')}) {who}: {event.get('why')}"
    if kind == "unrecognised":
        n = len(event.get("candidates", []))
        return f"{seq}  UNRECOGNISED ({event.get('rule')}): {event.get('why')} [{n} candidate(s)]"
    if kind == "stability":
        words = {"counting": "the count starts: 3, 2, 1…", "stood": "the stack stands", "fell": "THE STACK FELL"}
        seen = " (seen by the camera)" if event.get("source") == "camera" else ""
        return f"{seq}  {words.get(event.get('event'), event.get('event'))}{seen}" + (
            f" ({event['why']})" if event.get("why") else "")
    if kind == "phase":
        return f"{seq}  phase {event.get('phase')}"
    if kind == "correction":
        return f"{seq}  correction: {event.get('why')}"
    if kind == "end":
        ranking = ", ".join(f"{r['rank']}. {r['player']} {r['points']}" for r in event.get("ranking", []))
        return f"{seq}  game over: {ranking}"
    if kind == "fault":
        return f"{seq}  FAULT: {event.get('why')}"
    return f"{seq}  {kind}: {event}"
