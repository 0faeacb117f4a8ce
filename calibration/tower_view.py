"""Whether a camera pose shows enough of the Blox towers' sides to read their blocks.

A tower's top block shows its top face to any camera above the board; the blocks under it
show only their side faces. How many pixels tall a block's side face appears depends on
how far the camera's ray to the tower leans from vertical, on the camera's distance and
on the lens: from a camera nearly straight above the board (table-kit.md allows tilts
from 0 degrees) the lower blocks of a tower show a strip a pixel or two tall, blurred into
the blocks around it, and their colours cannot be read. That is known as soon as the
board pose is, so ``bloxcam calibrate board`` says so and how to fix it, before a game.

The measure is the image height of one block's vertical edge standing on each space's
centre (the bottom block: the one most easily lost). On rendered set-ups across
table-kit.md's ranges (bench/vision_blox.py's draws, 18 set-ups), the seven with more than
``MAX_SHORT_SHARE`` of their spaces under ``MIN_SIDE_PX`` had a per-space error of
1.5-4.5% (2.9% or more in six), the eleven others 0.3-1.9%.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.camera import Intrinsics
from calibration.kit import Kit
from calibration.pose import BoardPose

#: a block side face shorter than this (pixels) is a blurred strip whose colour is lost
MIN_SIDE_PX = 3.0
#: the pose is flagged when more of the spaces than this show such short sides
MAX_SHORT_SHARE = 0.10


@dataclass(frozen=True)
class TowerView:
    """The image height (pixels) of a block's side face on each space, rows x columns."""

    side_px: np.ndarray

    @property
    def median_px(self) -> float:
        return float(np.median(self.side_px))

    @property
    def short_share(self) -> float:
        """The share of spaces where a block's side face is shorter than ``MIN_SIDE_PX``."""
        return float(np.mean(self.side_px < MIN_SIDE_PX))

    @property
    def readable(self) -> bool:
        return self.short_share <= MAX_SHORT_SHARE

    def summary(self) -> str:
        return (f"tower view: a block's side face shows {self.median_px:.1f} px tall on the median space, "
                f"under {MIN_SIDE_PX:g} px on {round(self.short_share * self.side_px.size)} of {self.side_px.size} "
                f"spaces")

    def warning(self) -> str | None:
        """What to tell the user when the lower blocks of towers cannot be read, else None."""
        if self.readable:
            return None
        short = round(self.short_share * self.side_px.size)
        return (f"the camera sees the board too nearly from straight above for Blox towers: on {short} of "
                f"{self.side_px.size} spaces a block's side shows under {MIN_SIDE_PX:g} px, so the colours of "
                "blocks under a tower's top cannot be read. Tilt the camera 25-35 degrees toward the board's far "
                "edge (or use the standard lens rather than the wide one), then calibrate the board again")


def tower_view(kit: Kit, pose: BoardPose, intr: Intrinsics) -> TowerView:
    """How tall one block's side face appears on every space, from this pose and lens."""
    n, space, height = kit.blox.spaces, kit.blox.space_mm, kit.blox.block.height_mm
    centres = (np.arange(n) + 0.5) * space
    x, y = np.meshgrid(centres, centres)  # x along columns, y along rows (table-kit.md's board frame)
    foot = np.stack([x.ravel(), y.ravel(), np.zeros(n * n)], axis=1)
    top = foot - [0.0, 0.0, height]  # z points down into the table
    image = pose.project(np.concatenate([foot, top]), intr)
    side = np.linalg.norm(image[n * n:] - image[: n * n], axis=1)
    return TowerView(side.reshape(n, n))
