"""Blockers! tile faces: a library of glyph shapes and a matcher.

Private helper of :mod:`vision.blockers` (issue 9). A tile's face is read from its
ink alone (the dark print on the coloured tile), normalised for position and size
(the ink's bounding box fills a fixed canvas, aspect kept), so neither where the face
sits on the tile nor how large it is printed matters; only its shape does.

The reference shapes are drawn here from what the faces are: the letters A-I and
digits 1-9 in several stroke fonts (plain, bold, serif), the section symbols from
their names (a generic outline per name), and the wild tile's word ``BLOCKERS!``.
The symbol names are the edition's (``R-BLOCKERS-1``); a name this library cannot
draw is reported so a kit with other symbols gets a clear error, not silent misreads.

Matching is a normalised correlation of the observed ink canvas with every template
(all templates in one matrix product), with the templates blurred like the camera
blurs (several amounts) and then normalised as an observed print is
(:func:`blurred_template`); the best class and its
margin over the second best give the face and its confidence. Faces left unread in a
blurred frame can be matched again against templates smeared along a line
(:meth:`GlyphBank.streak_scores`: motion smears, it does not blur evenly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from vision.colours import centred_unit_rows

CANVAS = 32  # normalised glyph canvas, px
# Streaked templates (GlyphBank.streak_scores): smears of these lengths (canvas px, a
# print ~28 px tall) in these directions, over a slight focus blur.
STREAK_LENGTHS = (3.0, 5.0, 7.0, 9.0)
STREAK_ANGLES = (0.0, 45.0, 90.0, 135.0)
STREAK_BASE_BLUR = 0.8
INK_THRESHOLD = 0.45  # a tile's print is cut to the box of its ink above this (vision.tiles)
FILL = 28  # the ink's bounding box's larger side, px

LETTERS = tuple("ABCDEFGHI")
DIGITS = tuple("123456789")
WILD_TEXT = "BLOCKERS!"
FONTS = (cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_TRIPLEX, cv2.FONT_HERSHEY_PLAIN)


def symbol_outline(name: str, r: float = 1.0) -> list[np.ndarray]:
    """Generic outline(s) of a section symbol called ``name`` (centred, radius r).

    What the word means, drawn plainly: a five-pointed star, a disc with rays, a
    heart, a rhombus, a three-leaf clover, a drop, a crescent, a triangle, a square,
    a six-petal flower, an anchor, a lightning bolt."""
    if name == "star":
        a = -np.pi / 2 + np.arange(10) * np.pi / 5
        rad = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
        return [np.stack([rad * np.cos(a), rad * np.sin(a)], 1)]
    if name == "sun":
        a = np.arange(24) * np.pi / 12
        rad = np.where(np.arange(24) % 2 == 0, r, r * 0.72)
        return [np.stack([rad * np.cos(a), rad * np.sin(a)], 1)]
    if name == "heart":
        t = np.linspace(0, 2 * np.pi, 64, endpoint=False)
        x = 16 * np.sin(t) ** 3
        y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
        return [np.stack([x, y], 1) * (r / 17)]
    if name == "diamond":
        return [np.array([[0, -r], [0.75 * r, 0], [0, r], [-0.75 * r, 0]])]
    if name == "square":
        q = 0.8 * r
        return [np.array([[-q, -q], [q, -q], [q, q], [-q, q]])]
    if name == "triangle":
        return [np.array([[0, -r], [r, 0.8 * r], [-r, 0.8 * r]])]
    if name == "clover":
        out = []
        for k in range(3):
            ang = -np.pi / 2 + k * 2 * np.pi / 3
            c = np.array([math.cos(ang), math.sin(ang)]) * r * 0.45
            a = np.linspace(0, 2 * np.pi, 32, endpoint=False)
            out.append(c + np.stack([np.cos(a), np.sin(a)], 1) * r * 0.5)
        return out
    if name == "flower":
        out = [np.stack([np.cos(a), np.sin(a)], 1) * r * 0.3 for a in [np.linspace(0, 2 * np.pi, 24, endpoint=False)]]
        for k in range(6):
            ang = k * np.pi / 3
            c = np.array([math.cos(ang), math.sin(ang)]) * r * 0.6
            a = np.linspace(0, 2 * np.pi, 24, endpoint=False)
            out.append(c + np.stack([np.cos(a), np.sin(a)], 1) * r * 0.38)
        return out
    if name == "drop":
        t = np.linspace(0, 2 * np.pi, 48, endpoint=False)
        x = r * 0.7 * np.sin(t) * np.sin(t / 2)
        y = -r * np.cos(t)
        return [np.stack([x, y], 1)]
    if name == "crescent":
        a = np.linspace(-np.pi * 0.8, np.pi * 0.8, 32)
        outer = np.stack([-r * np.cos(a), r * np.sin(a)], 1)
        b = np.linspace(np.pi * 0.6, -np.pi * 0.6, 32)
        inner = np.stack([-r * 0.35 - r * 0.75 * np.cos(b), r * 0.95 * np.sin(b)], 1)
        return [np.concatenate([outer, inner])]
    if name == "anchor":
        w = 0.12 * r
        shaft = np.array([[-w, -0.7 * r], [w, -0.7 * r], [w, 0.8 * r], [-w, 0.8 * r]])
        bar = np.array([[-0.5 * r, -0.45 * r], [0.5 * r, -0.45 * r], [0.5 * r, -0.3 * r], [-0.5 * r, -0.3 * r]])
        a = np.linspace(0.15 * np.pi, 0.85 * np.pi, 20)
        arc_o = np.stack([0.8 * r * np.cos(a), 0.1 * r + 0.8 * r * np.sin(a) - 0.1 * r], 1)
        arc_i = np.stack([0.6 * r * np.cos(a[::-1]), 0.1 * r + 0.6 * r * np.sin(a[::-1]) - 0.1 * r], 1)
        ring = np.stack([np.cos(np.linspace(0, 2 * np.pi, 16)), np.sin(np.linspace(0, 2 * np.pi, 16))], 1) * 0.2 * r
        return [shaft, bar, np.concatenate([arc_o, arc_i]), ring + [0, -0.85 * r]]
    if name == "lightning":
        return [np.array([[0.2, -1.0], [-0.5, 0.1], [-0.05, 0.1], [-0.3, 1.0], [0.5, -0.2], [0.05, -0.2], [0.3, -1.0]]) * r]
    raise KeyError(name)


KNOWN_SYMBOLS = ("star", "sun", "heart", "diamond", "square", "triangle", "clover", "flower", "drop", "crescent",
                 "anchor", "lightning")


def ink_box(ink: np.ndarray, threshold: float = 0.35) -> tuple[int, int, int, int, int]:
    """(count, x, y, w, h): how many pixels of the ink image exceed ``threshold`` and
    their bounding box."""
    m = (ink > threshold).view(np.uint8)
    count = cv2.countNonZero(m)
    if count == 0:
        return 0, 0, 0, 0, 0
    x, y, w, h = cv2.boundingRect(m)
    return count, x, y, w, h


def ink_boxes(inks: np.ndarray, threshold: float = 0.35) -> np.ndarray:
    """:func:`ink_box` of each of the ink images ``inks`` (N, h, w), all at once: (N, 5)."""
    m = inks > threshold
    rows, cols = m.any(axis=2), m.any(axis=1)
    h, w = m.shape[1:]
    y0, x0 = rows.argmax(axis=1), cols.argmax(axis=1)
    y1, x1 = h - rows[:, ::-1].argmax(axis=1), w - cols[:, ::-1].argmax(axis=1)
    count = np.count_nonzero(m, axis=(1, 2))
    out = np.column_stack([count, x0, y0, x1 - x0, y1 - y0])
    out[count == 0] = 0
    return out


def normalise_ink(ink: np.ndarray, threshold: float = 0.35,
                  box: tuple[int, int, int, int, int] | None = None) -> np.ndarray | None:
    """The ink image (0 = tile, 1 = full ink) cropped to its bounding box and scaled so
    the box's larger side is :data:`FILL` px, centred on a :data:`CANVAS` canvas; None
    when there is no ink. ``box``: :func:`ink_box` of the same image and threshold, if
    already known."""
    count, x0, y0, w, h = ink_box(ink, threshold) if box is None else box
    if count < 3:
        return None
    s = FILL / max(h, w)
    nh, nw = max(1, int(round(h * s))), max(1, int(round(w * s)))
    crop = ink[y0:y0 + h, x0:x0 + w].astype(np.float32)
    small = cv2.resize(crop, (nw, nh), interpolation=cv2.INTER_AREA if s < 1 else cv2.INTER_LINEAR)
    out = np.zeros((CANVAS, CANVAS), np.float32)
    oy, ox = (CANVAS - nh) // 2, (CANVAS - nw) // 2
    out[oy:oy + nh, ox:ox + nw] = small
    return out


def blurred_template(base: np.ndarray, blur: float) -> np.ndarray:
    """The canvas a print whose sharp canvas is ``base`` gives when the camera blurs it
    by ``blur`` canvas px: blurred first, then cut to its ink box (at the threshold the
    tiles' ink is cut at, relative to the blurred print's darkest ink) and scaled to
    fill the canvas, as :func:`normalise_ink` treats an observed print. (Blurring the
    normalised canvas instead leaves the blur's halo outside the box and the shape
    smaller than an observed blurred print of the same face.)"""
    out = _as_printed(cv2.GaussianBlur(base, (0, 0), blur) if blur else base)
    return base if out is None else out


def _as_printed(ink: np.ndarray) -> np.ndarray | None:
    """A template's ink as the camera's print is normalised: relative to its darkest
    ink, cut to its box at the tiles' INK_THRESHOLD and scaled to fill the canvas."""
    return normalise_ink(ink / max(float(ink.max()), 1e-6), INK_THRESHOLD)


def _streak_kernel(length: float, angle_deg: float) -> np.ndarray:
    """A straight smear ``length`` px long at ``angle_deg`` (a normalised line kernel)."""
    k = np.zeros((15, 15), np.float32)
    dx = math.cos(math.radians(angle_deg)) * length / 2
    dy = math.sin(math.radians(angle_deg)) * length / 2
    p0 = (int(round(16 * (7 - dx))), int(round(16 * (7 - dy))))
    p1 = (int(round(16 * (7 + dx))), int(round(16 * (7 + dy))))
    cv2.line(k, p0, p1, 1.0, 1, cv2.LINE_AA, 4)
    return k / k.sum()


def _text_glyph(text: str, font: int, thick_frac: float, size: int = 96) -> np.ndarray:
    (w, h), base = cv2.getTextSize(text, font, 1.0, 1)
    scale = size * 0.6 / h
    th = max(1, int(round(size * thick_frac)))
    (w, h), base = cv2.getTextSize(text, font, scale, th)
    img = np.zeros((size + 2 * th + h, w + 4 * th + size // 4), np.uint8)
    cv2.putText(img, text, (2 * th, th + h + size // 8), font, scale, 255, th, cv2.LINE_AA)
    return img.astype(np.float32) / 255.0


def _symbol_glyph(name: str, size: int = 96) -> np.ndarray:
    img = np.zeros((size, size), np.float32)
    polys = [np.round((p * size * 0.42 + size / 2) * 16).astype(np.int32) for p in symbol_outline(name)]
    cv2.fillPoly(img, polys, 1.0, cv2.LINE_AA, 4)
    return img


@dataclass
class GlyphMatch:
    face: str | None
    score: float
    margin: float
    best: str
    second: str = ""


class GlyphBank:
    """Templates of every face name and the matcher (see the module docstring)."""

    def __init__(self, symbols: list[str], *, letters: tuple[str, ...] = LETTERS, digits: tuple[str, ...] = DIGITS,
                 wild: str = "wild", blurs: tuple[float, ...] = (0.6, 1.2, 1.9, 2.8, 4.0)) -> None:
        unknown = [s for s in symbols if s not in KNOWN_SYMBOLS]
        if unknown:
            raise ValueError(f"no glyph shape known for the symbol(s) {', '.join(unknown)}; known: "
                             f"{', '.join(KNOWN_SYMBOLS)}")
        self.names: list[str] = list(letters) + list(digits) + list(symbols) + [wild]
        self.wild = wild
        sources: list[tuple[int, np.ndarray]] = []
        for k, name in enumerate(self.names):
            if name in symbols:
                for ang in (0.0, -4.0, 4.0):
                    g = _symbol_glyph(name)
                    if ang:
                        M = cv2.getRotationMatrix2D((g.shape[1] / 2, g.shape[0] / 2), ang, 1.0)
                        g = cv2.warpAffine(g, M, (g.shape[1], g.shape[0]))
                    sources.append((k, g))
            else:
                text = WILD_TEXT if name == wild else name
                for font in FONTS:
                    for thick in ((0.05, 0.1) if name != wild else (0.08,)):
                        sources.append((k, _text_glyph(text, font, thick)))
        templates, classes, levels = [], [], []
        self._bases: list[tuple[int, np.ndarray]] = []  # each source's sharp canvas
        for k, g in sources:
            base = normalise_ink(g)
            if base is None:
                continue
            self._bases.append((k, base))
            for j, blur in enumerate(blurs):
                templates.append(blurred_template(base, blur).ravel())
                classes.append(k)
                levels.append(j)
        # grouped by (class, blur): one reduction gives each class's best at each blur
        order = np.lexsort((np.array(levels), np.array(classes)))
        T = centred_unit_rows(np.array(templates, np.float32)[order])
        self.T = T
        self.classes = np.array(classes)[order]
        self.levels = np.array(levels)[order]
        self.blurs = tuple(blurs)
        assert len(set(classes)) == len(self.names)
        group = self.classes * len(blurs) + self.levels
        assert np.all(np.diff(group) >= 0) and len(set(group.tolist())) == len(self.names) * len(blurs)
        self._starts = np.searchsorted(group, np.arange(len(self.names) * len(blurs)))
        # each class's template rows, padded to the longest class with its first row
        # again (a repeat after the first never changes which one is the first best)
        bounds = np.append(self._starts[::len(blurs)], len(T))
        most = int(np.diff(bounds).max())
        self._class_rows = np.array([np.r_[np.arange(a, b), np.full(most - (b - a), a)]
                                     for a, b in zip(bounds[:-1], bounds[1:])])
        self.is_text = np.array([n in letters or n in digits for n in self.names])
        self._streaked: tuple[np.ndarray, np.ndarray] | None = None  # built when first needed

    def streak_scores(self, X: np.ndarray) -> np.ndarray:
        """(N, classes): the best correlation of normalised canvases ``X`` (rows of
        :meth:`score_rows`' ``X``) with each class's templates streaked as a moving
        camera or table smears a print (:data:`STREAK_LENGTHS` canvas px along
        :data:`STREAK_ANGLES`, then normalised as an observed print is). The isotropic
        blur of the main templates fits such a print poorly: a face it leaves unread
        may fit one of these. Built on first use (a few thousand templates)."""
        if self._streaked is None:
            rows, cls = [], []
            for k, base in self._bases:
                soft = cv2.GaussianBlur(base, (0, 0), STREAK_BASE_BLUR)
                for length in STREAK_LENGTHS:
                    for ang in STREAK_ANGLES:
                        out = _as_printed(cv2.filter2D(soft, -1, _streak_kernel(length, ang)))
                        if out is not None:
                            rows.append(out.ravel())
                            cls.append(k)
            order = np.argsort(np.array(cls), kind="stable")
            T = centred_unit_rows(np.array(rows, np.float32)[order])
            cls_sorted = np.array(cls)[order]
            assert len(set(cls)) == len(self.names)
            self._streaked = (T, np.searchsorted(cls_sorted, np.arange(len(self.names))))
        T, starts = self._streaked
        return np.maximum.reduceat(X @ T.T, starts, axis=1)

    def scores(self, canvases: np.ndarray) -> np.ndarray:
        """(N, classes) best correlation of each canvas with each class's templates."""
        return self.score_rows(canvases)[0]

    def score_rows(self, canvases: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(per, best, X): each canvas's best correlation with each class (N, classes),
        the index of each class's best template (N, classes) and the normalised canvases
        (N, D). A row of ``best`` and of ``X`` is what :meth:`blur_of` and
        :meth:`discriminate` look at."""
        X = centred_unit_rows(canvases.reshape(len(canvases), -1).astype(np.float32))
        full = (X @ self.T.T)[:, self._class_rows]  # (N, classes, most templates of a class)
        j = full.argmax(axis=2)
        best = self._class_rows[np.arange(len(self.names)), j]  # (N, classes)
        per = np.take_along_axis(full, j[:, :, None], axis=2)[:, :, 0]
        return per, best, X

    def blur_of(self, best: np.ndarray, a: str) -> float:
        """The blur (canvas px) of class ``a``'s best template for a canvas (its row of
        :meth:`score_rows`' ``best``)."""
        return float(self.blurs[int(self.levels[best[self.names.index(a)]])])

    def discriminate(self, x: np.ndarray, best: np.ndarray, a: str, b: str) -> float:
        """Which of the classes ``a`` and ``b`` a canvas (its rows ``x``, ``best`` of
        :meth:`score_rows`) looks like where their best templates differ: +1 exactly
        ``a``'s template, -1 exactly ``b``'s. Two faces that share most of their ink (B
        and 8, 6 and 8, a sun and a flower) differ in a few strokes; the correlation over
        the whole canvas hardly sees them, this weighs them alone."""
        ta, tb = self.T[best[self.names.index(a)]], self.T[best[self.names.index(b)]]
        w = np.abs(ta - tb)
        w /= float(w.max()) + 1e-9
        da = float(np.sum(w * (x - ta) ** 2))
        db = float(np.sum(w * (x - tb) ** 2))
        return (db - da) / max(da + db, 1e-9)

    def decide(self, per: np.ndarray, allowed: np.ndarray | None = None, *, min_score: float = 0.6,
               min_margin: float = 0.03) -> GlyphMatch:
        """The face from one row of :meth:`scores`, among the ``allowed`` classes."""
        p = per if allowed is None else np.where(allowed, per, -2.0)
        return self.decide_many(p[None], min_score=min_score, min_margin=min_margin)[0]

    def decide_many(self, per: np.ndarray, *, min_score: float = 0.6, min_margin: float = 0.03) -> list[GlyphMatch]:
        """:meth:`decide` of each row of ``per`` (N, classes), all classes allowed."""
        order = np.argsort(-per, axis=1)
        rows = np.arange(len(per))
        sc, sc2 = per[rows, order[:, 0]], per[rows, order[:, 1]]
        mg = sc - sc2
        out = []
        for a, b, s_, m_ in zip(order[:, 0].tolist(), order[:, 1].tolist(), sc.tolist(), mg.tolist()):
            face = self.names[a] if s_ >= min_score and m_ >= min_margin else None
            out.append(GlyphMatch(face, s_, m_, self.names[a], self.names[b]))
        return out

    def match(self, canvases: np.ndarray, *, min_score: float = 0.6, min_margin: float = 0.03) -> list[GlyphMatch]:
        """Faces of (N, CANVAS, CANVAS) normalised ink canvases (seen alike, as in one
        frame)."""
        if len(canvases) == 0:
            return []
        per = self.scores(canvases)
        return [self.decide(row, min_score=min_score, min_margin=min_margin) for row in per]
