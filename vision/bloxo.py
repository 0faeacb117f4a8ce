"""Bloxo recogniser: the cards on the table as the ``bloxo`` observation (issue 9).

``Recognizer(calibration).process(frame, t, index)`` returns one observation of
``observation.md``: ``state.cards`` lists every card read on the card grid (R-BLOXO-2:
integer positions, start card ``[0, 0]`` at the play area's centre, x to the right, y
toward the near edge) with its quadrants NW, NE, SE, SW in table coordinates as
``[colour, shape]`` (R-BLOXO-1). How cards are found and read: :mod:`vision.cards`.

Extra fields (documented additions to the observation format):

* ``cards[i].confidence``: the card's lowest quadrant confidence;
* ``cards[i].offset_mm``, ``cards[i].rotation_deg``: how far it lies off its grid spot;
* ``cards[i].disagreements``: quadrants whose colour and contour shape disagree, as
  ``{"quadrant": k, "color": c, "shape": s}``; such a quadrant is reported as
  ``[colour, null]`` (shape unread), never with a shape that contradicts R-BLOXO-1;
  an outline that fits the other shape only barely better (correlation margin below
  ``UNSURE_SHAPE_MARGIN``: a thin star under strong defocus), or whose colour lies
  farther than ``UNSURE_COLOUR_DIST`` from every surveyed colour (a blob blur has
  joined to something else), is no evidence of a misprint: its card is occluded instead;
* ``state.misplaced``: cards far off the grid or lying on another card:
  ``{"near": [x, y], "why": "off-grid" | "on-top", "covers": [[x, y], ...],
  "offset_mm", "rotation_deg", "quadrants"}``. The grid positions they cover are also
  listed in ``occluded`` (what lies there cannot be seen), and such a frame is not
  ``stable``: the engine must not commit a tableau the rules cannot hold.

A card partly hidden (a hand, glare, a card on top) is listed in ``occluded`` and not
in ``cards``: it is not guessed. A card seen in an earlier frame and now wholly under
a hand stays ``occluded`` (not removed) while the hand is there. An arm seen crossing
the table just outside the play area (:class:`vision.surround.SurroundWatch`, against
the survey's empty table) makes the frame not ``stable`` even where the hand's skin is
too close to the table's colour to be found over the play area.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.board import BoardLost, BoardView
from vision.cards import Card, CardReader, CardsResult, PoseGuard
from vision.motion import StabilityGate
from vision.surround import SurroundWatch

QUADRANT_OFFSETS = ((-1, -1), (1, -1), (1, 1), (-1, 1))  # NW, NE, SE, SW (x right, y near)
# Correlation margin (best shape over the next, see vision.cards.ShapeTemplates) below
# which an outline that disagrees with its colour is taken as unreadable, not as a
# misprint: on strongly defocused dev scenes, stars read as diamonds had margins
# of 0.002 to 0.01; a real misprint (a pink star, rendered) reads by 0.14 in neutral
# light and by 0.03 or more under defocus or motion blur.
UNSURE_SHAPE_MARGIN = 0.015
# Chromaticity distance (see vision.cards.ColourRefs) beyond which a quadrant's colour
# is no evidence either: where vision.cards.Blob.confidence's colour factor reaches 0.
# A dev scene's blue cross whose blob had grown into yellow beside it (967 mm2, a
# shape is under 600) read "yellow" at 0.19, its outline a clear cross.
UNSURE_COLOUR_DIST = 0.18


class Recognizer:
    """Bloxo cards from frames (see the module docstring)."""

    game = "bloxo"

    def __init__(self, calibration: Any, *, stable_seconds: float = 1.0, edition: Any = None) -> None:
        self.calibration = calibration
        self.view = BoardView(calibration, "bloxo")
        self.pose_guard = PoseGuard(self.view)  # the pose re-checked only when it may have moved
        self.kit = calibration.kit
        self.reader = CardReader(self.view, calibration.survey)
        self.gate = StabilityGate(stable_seconds)
        # an arm reaching in over the table round the play area, even where its skin is
        # too close to the table's colour for the foreign mask
        self.surround = SurroundWatch(self.view, calibration.survey)
        self.edition = edition
        # a disagreement between colour and outline (R-BLOXO-1) is reported only when the
        # outline's best shape beats the next one by at least this correlation margin
        self.unsure_margin = UNSURE_SHAPE_MARGIN
        self.unsure_colour = UNSURE_COLOUR_DIST  # (likewise for the colour's distance)
        self._known: dict[tuple[int, int], list] = {}  # last stable cards, for cards under a hand
        self.last: CardsResult | None = None

    # ---------------------------------------------------------------- process
    def process(self, frame_bgr: np.ndarray, t: float, index: int, lores: np.ndarray | None = None) -> dict:
        obs: dict[str, Any] = {"game": "bloxo", "frame": int(index), "t": round(float(t), 4), "stable": False,
                               "occluded": [], "confidence": 0.0, "state": {"cards": []}}
        self.pose_guard.update(frame_bgr, t)
        # one grey copy for the unchanged-frame test and the motion gate
        grey = cv2.cvtColor(frame_bgr, cv2.COLOR_BGR2GRAY) if frame_bgr.ndim == 3 else frame_bgr
        if lores is None:
            lores = grey
        try:
            res = self.reader.read(frame_bgr, grey)
        except BoardLost:
            self.gate.update(frame_bgr, t, blocked=True, lores=lores)
            obs["error"] = "board markers not found"
            return obs
        self.last = res
        cards = []
        confs = [1.0]
        occluded = set(res.partial)
        half = self.kit.bloxo.card_mm / 2
        for c in sorted(res.cards, key=lambda c: (c.at[1], c.at[0])):  # type: ignore[index]
            # a hand over part of the card: it may hide a shape's edge, do not trust it
            if res.foreign_at(c.centre[0], c.centre[1], half) > 0.15:
                occluded.add(c.at)  # type: ignore[arg-type]
                continue
            entry, conf = _card_json(c, self.reader.expected_shape)
            disagree = entry.get("disagreements", [])
            if disagree and (res.foreign_at(c.centre[0], c.centre[1], 1.5 * half) > 0
                             or res.foreign_at(c.centre[0], c.centre[1], 1.5 * half, "glare") > 0
                             or min(c.quads[d["quadrant"]].shape_margin for d in disagree) < self.unsure_margin
                             or max(c.quads[d["quadrant"]].colour_dist for d in disagree) > self.unsure_colour):
                # colour and outline disagree next to a hand or a glare spot: something
                # over the print, not a misprint (R-BLOXO-1); or the outline fits the
                # other shape barely better than the colour's own (a thin star under
                # strong defocus), or the colour is far from every printed one:
                # unreadable, no evidence of a misprint. The card is occluded, not guessed.
                occluded.add(c.at)  # type: ignore[arg-type]
                continue
            cards.append(entry)
            confs.append(conf)
        # Cards known from before and now not seen, under something foreign: occluded.
        seen = {tuple(e["at"]) for e in cards}
        for pos in self._known:
            if pos not in seen and pos not in occluded:
                cx, cy = self.reader.origin + np.array(pos) * self.reader.card
                if res.foreign_at(cx, cy, half) > 0.05:
                    occluded.add(pos)
        misplaced = []
        for c in res.misplaced:
            entry, conf = _card_json(c, self.reader.expected_shape)
            misplaced.append({"near": list(c.at or (0, 0)), "why": c.status, "covers": [list(p) for p in c.covers],
                              "offset_mm": entry["offset_mm"], "rotation_deg": entry["rotation_deg"],
                              "quadrants": entry["quadrants"]})
            occluded.update(c.covers)
        hand = res.foreign is not None and bool(res.foreign.any())
        hand = bool(self.surround.arms(frame_bgr, t)) or hand
        # a marker hidden: something lies over the play area's corner (an arm reaching in)
        motion = self.gate.update(frame_bgr, t, blocked=hand or bool(misplaced) or self.view.confidence == 0
                                  or self.pose_guard.hidden > 0,
                                  lores=lores)
        obs["stable"] = bool(motion.stable)
        obs["occluded"] = sorted([int(p[0]), int(p[1])] for p in occluded)
        obs["state"] = {"cards": cards}
        if misplaced:
            obs["state"]["misplaced"] = misplaced
        obs["confidence"] = round(float(min(min(confs), self.view.confidence)), 4)
        if obs["stable"]:
            self._known = {tuple(e["at"]): e["quadrants"] for e in cards}
        return obs

    # ---------------------------------------------------------------- overlay
    def overlay(self, frame_bgr: np.ndarray, observation: dict) -> np.ndarray:
        out = frame_bgr.copy()
        if self.view.pose is None:
            return out
        card = self.kit.bloxo.card_mm
        org = self.reader.origin
        occ = {tuple(p) for p in observation.get("occluded", [])}
        for e in observation.get("state", {}).get("cards", []):
            x, y = e["at"]
            cx, cy = org + np.array([x, y]) * card
            poly = self.view.project(np.array([[cx - card / 2, cy - card / 2], [cx + card / 2, cy - card / 2],
                                               [cx + card / 2, cy + card / 2], [cx - card / 2, cy + card / 2]]))
            colour = (0, 200, 0) if not e.get("disagreements") else (0, 165, 255)
            cv2.polylines(out, [np.round(poly).astype(np.int32)], True, colour, 2, cv2.LINE_AA)
            for (dx, dy), q in zip(QUADRANT_OFFSETS, e["quadrants"]):
                p = self.view.project(np.array([[cx + dx * card / 4, cy + dy * card / 4]]))[0]
                label = f"{q[0][:1]}{(q[1] or '?')[:1]}"
                cv2.putText(out, label, (int(p[0]) - 6, int(p[1]) + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35,
                            (255, 255, 255), 1, cv2.LINE_AA)
        for pos in occ:
            cx, cy = org + np.array(pos) * card
            poly = self.view.project(np.array([[cx - card / 2, cy - card / 2], [cx + card / 2, cy - card / 2],
                                               [cx + card / 2, cy + card / 2], [cx - card / 2, cy + card / 2]]))
            cv2.polylines(out, [np.round(poly).astype(np.int32)], True, (0, 0, 255), 2, cv2.LINE_AA)
        for m in observation.get("state", {}).get("misplaced", []):
            x, y = m["near"]
            p = self.view.project(np.array([org + np.array([x, y]) * card]))[0]
            cv2.putText(out, m["why"], (int(p[0]) - 20, int(p[1])), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 255), 1,
                        cv2.LINE_AA)
        return out


def _card_json(c: Card, expected_shape: dict[str, str]) -> tuple[dict[str, Any], float]:
    quads: list[list[Any]] = []
    disagree = []
    conf = 1.0
    for k, b in enumerate(c.quads):
        colour, shape = b.colour, b.shape
        conf = min(conf, b.confidence)
        if colour is not None and shape is not None and expected_shape.get(colour) != shape:
            # R-BLOXO-1: a colour has one shape; colour and outline disagree -> say so
            disagree.append({"quadrant": k, "color": colour, "shape": shape})
            shape = None
            conf = min(conf, 0.3)
        quads.append([colour, shape])
    entry: dict[str, Any] = {"at": [int(c.at[0]), int(c.at[1])] if c.at else None, "quadrants": quads,
                             "confidence": round(float(conf), 4), "offset_mm": round(float(c.offset_mm), 2),
                             "rotation_deg": round(float(c.rotation_deg), 2)}
    if disagree:
        entry["disagreements"] = disagree
    return entry, conf


# ------------------------------------------------------------------------ score


def score(truth: dict, observed: dict) -> dict[str, tuple[int, int]]:
    """Metrics for ``bloxcam evaluate``: (errors, total) each.

    * ``quadrant_color`` / ``quadrant_shape``: over the quadrants of every truth card
      that is not occluded in the truth and that the recogniser reported (read or
      occluded); a card reported occluded is not counted here (see ``card_hidden``);
      a card missing from the observation counts four errors of each.
    * ``card_position``: truth cards (not occluded) not reported at their grid position
      (missing, or read elsewhere), plus cards reported where the truth has none.
    * ``card_hidden``: visible truth cards the recogniser called occluded (caution,
      not a wrong reading).
    * ``occlusion_missed``: truth-occluded cards read with a wrong colour or shape
      (a partly covered card must be occluded, not guessed)."""
    t_cards = {tuple(c["at"]): c["quadrants"] for c in truth.get("state", {}).get("cards", [])
               if isinstance(c.get("at"), list) and all(float(v).is_integer() for v in c["at"])}
    t_occ = {tuple(p) for p in truth.get("occluded", [])}
    o_cards = {tuple(c["at"]): c["quadrants"] for c in observed.get("state", {}).get("cards", []) if c.get("at")}
    o_occ = {tuple(p) for p in observed.get("occluded", [])}
    col = [0, 0]
    shp = [0, 0]
    pos = [0, 0]
    hidden = [0, 0]
    missed = [0, 0]
    for at, quads in t_cards.items():
        if at in t_occ:
            if at in o_cards:
                missed[1] += 1
                missed[0] += int(o_cards[at] != quads)
            continue
        pos[1] += 1
        hidden[1] += 1
        if at in o_cards:
            for tq, oq in zip(quads, o_cards[at]):
                col[1] += 1
                shp[1] += 1
                col[0] += int(oq[0] != tq[0])
                shp[0] += int(oq[1] != tq[1])
        elif at in o_occ:
            hidden[0] += 1
        else:
            pos[0] += 1
            col[0] += 4
            col[1] += 4
            shp[0] += 4
            shp[1] += 4
    for at in o_cards:
        if at not in t_cards:
            pos[0] += 1
            pos[1] += 1
    return {"quadrant_color": (col[0], col[1]), "quadrant_shape": (shp[0], shp[1]),
            "card_position": (pos[0], pos[1]), "card_hidden": (hidden[0], hidden[1]),
            "occlusion_missed": (missed[0], missed[1])}
