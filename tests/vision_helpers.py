"""Helpers shared by the recognition tests."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np


def jpeg_round_trip(image: np.ndarray, quality: int = 90) -> np.ndarray:
    """The image as a camera's JPEG would deliver it: really encoded and decoded by OpenCV."""
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)


def read_still(recognizer: Any, image: np.ndarray) -> dict:
    """A photo held still: shown twice a second apart, so the stability gate can pass it."""
    recognizer.process(image, -1.001, 0)
    return recognizer.process(image, 0.0, 1)


def user_calibration(setup: Any, game: str, seed: int, kit: Any, jpeg_quality: int | None = 95) -> Any:
    """What ``bloxcam calibrate board`` makes of a photo of the empty board or table
    (rendered for ``setup`` in neutral light, through a camera's JPEG unless
    ``jpeg_quality`` is None): the kit's default lens for the camera model, the pose
    from the markers, and the survey."""
    from calibration.camera import default_intrinsics
    from calibration.pose import estimate_pose
    from calibration.render import scene as sc
    from calibration.render import states as st
    from calibration.store import Calibration
    from calibration.survey import survey

    cond = sc.sample_conditions(seed, "neutral", area=kit.area_mm(game), kit=kit)
    board = sc.render_frame(setup, st.empty_state(kit, game), cond, seed).image
    if jpeg_quality is not None:
        board = jpeg_round_trip(board, jpeg_quality)
    intr = default_intrinsics(setup.model, board.shape[1], board.shape[0])
    pose = estimate_pose(board, kit, game, intr, min_markers=4)
    return Calibration(game=game, camera=intr, camera_model=setup.model, kit=kit, pose=pose,
                       survey=survey(board, kit, game, pose, intr))
