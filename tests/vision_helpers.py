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
