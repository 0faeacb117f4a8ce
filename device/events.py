"""Event dictionaries in the shape of observation.md (``kind`` ``stability`` / ``fault``)."""

from __future__ import annotations

from typing import Any


def stability_event(event: str, t: float, **extra: Any) -> dict[str, Any]:
    """A Block Out! stability event: ``placed``, ``counting``, ``stood`` or ``fell``."""
    if event not in ("placed", "counting", "stood", "fell"):
        raise ValueError(f"unknown stability event {event!r}")
    out: dict[str, Any] = {"kind": "stability", "event": event, "t": round(float(t), 6)}
    out.update(extra)
    return out


def fault_event(source: str, fault: str, t: float, detail: str = "", **extra: Any) -> dict[str, Any]:
    """A ``fault`` event: camera or sensor trouble, and its recovery (``fault: "recovered"``).

    ``source`` names the device (``"camera"``, ``"accel"``); ``fault`` is a short token
    (``"io-error"``, ``"no-answer"``, ``"fifo-overflow"``, ``"disappeared"``,
    ``"corrupt-frame"``, ``"reopen-failed"``, ``"recovered"``).
    """
    out: dict[str, Any] = {"kind": "fault", "t": round(float(t), 6), "source": source, "fault": fault}
    if detail:
        out["detail"] = detail
    out.update(extra)
    return out
