"""Pose-dependent geometry of the Blox recogniser: probes, their labels per hypothesis,
and which neighbour can hide which probe. Computed once per pose (cached by the
recogniser under ``BoardView.version``); every frame then only samples pixels.

For every cell a lattice of image pixels ("probes") covers everything the cell's
content could show: its own square and the image of the tallest tower standing on
it. For every hypothesis about the cell (empty, a tower of 1..5 blocks, a figure) the
ray through each probe is cast against that hypothesis's solid (nominal kit sizes: the
block footprint and height, the chip disc on a tower below the tallest height -- a
tower of 5 carries none, :meth:`calibration.kit.BlockSpec.carries_chip` --, the
figure's coloured top; the clear figure body lets the space show through) and the probe gets a
*label*: what it would see. Probes near an edge between two surfaces, by less than
the kit's block offset and rotation allow, are labelled ambiguous, so the pieces'
placement jitter never decides anything; a board probe that the tower's footprint,
grown by that offset and rotation, may cover is scored as the square or something
unknown, whichever costs less (``OWN_EDGE``).
A side face seen at a grazing angle moves far in the image when its block sits off
centre: a side probe whose ray would leave its level's face if the face moved
``SIDE_TOL`` mm along its normal gets the small weight ``WEAK_SIDE_WEIGHT`` (``e_w``);
so does one that lies less than ``SIDE_MARGIN_PX`` image pixels from its level's top or
bottom edge (seen at a grazing angle a level is a band a few pixels tall, and blur,
the lens and JPEG mix the next level's colour into its edges); every other entry
weighs 1. The two rows of side probes on a level's face sit symmetrically about its
middle, closer to it where the level's band is thin in the image, so that they keep
that margin where the band leaves room (``SIDE_ROW_SPREAD``); the band's height per
cell and level is kept (``level_band_px``) for the confidence of the level's colour.
Such a weak probe near an edge between two levels sees
the level across that edge when a block sits a little off (``e_alt``): the recogniser
scores it as telling the colour of one of the two levels. Every side probe has a
substitute on the same face and row, nearer the face's corner (``substitutes``),
weighed by the recogniser by how much a nearer piece hides the probe it stands in for.

Where a probe's ray reaches the table beyond the board's edge (not a marker), a
hypothesis that leaves it uncovered predicts the table's colour there (measured per frame
on the table around the board, :attr:`BloxGeometry.table_pts`): near the far edge of an
oblique view the table is what an empty cell shows above itself, and a piece is seen
against it. Where the ray passes over a cell farther from the camera's nadir (a piece
standing there, decided after this cell, may hide the table: ``table_behind``), the
table or something unknown, whichever explains the probe better.

Occlusion between cells: for every probe and every cell nearer the camera's nadir
(only such a cell can stand between the camera and what the probe looks at), the
lowest height a solid on that cell must reach to cover the probe's ray, for the
footprint grown by the blocks' placement jitter (``pair_mm``) and for the nominal one
(``pair_nominal_mm``). A frame's decisions then say which probes are hidden (the
nominal solid covers them) and which may be (only the grown one does).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from calibration.kit import Kit
from vision.board import BoardView

# Probe sources: what a probe's colour is compared with under a hypothesis. TABLE: the
# table beyond the board's edge (a piece near the far edge is seen against it). OWN_EDGE:
# the cell's square where the tower's blocks may reach when they sit off centre (the
# square, or something unknown: whichever explains the probe better).
# TOP_OVER_BOARD: the top face of the tallest tower (which has no chip) where the ray,
# without the tower, would reach another space's square (``BloxGeometry.behind``).
# BEHIND: where the hypothesis puts nothing and the ray reaches another space's square:
# that square, or a piece standing on that space (a block's colour), or something unknown.
UNKNOWN, OWN, CHIP, FIG_CAP, FIG_SIDE, BLK_TOP, BLK_SIDE, OWN_BODY, TABLE, OWN_EDGE, TOP_OVER_BOARD, BEHIND = range(12)
N_SRC = 12
# Which other level a side probe may see when the blocks sit off their nominal places
# (``e_alt``): none (its face is robust, or the edge it is near is the board's or the
# same block's top face), the level below, the level above.
ALT_NONE, ALT_DOWN, ALT_UP = range(3)
#: table points this far (mm) beyond the board's edge at least, away from the markers
TABLE_MARGIN_MM = 2.0
# Group types within one (cell, hypothesis): single-valued ones and the per-level ones.
G_UNKNOWN, G_OWN, G_CHIP, G_FIG = range(4)
G_LEVEL0 = 4  # + level - 1
N_GTYPES = 9
EMPTY, FIGURE = 0, 6  # hypothesis ids; 1..5 are towers of that height
# How a figure standing on a nearer cell covers an occlusion pair's ray: not at all,
# only where its placement may put it, or where the kit puts it (on its space's centre).
# A figure is a cylinder 22 mm across, far narrower than the grown block footprint the
# pair's heights describe (34 mm square): taken as that box, a figure hid the lower
# levels of the tower behind it, and they were guessed (three dev draws: 50 cells misread).
FIG_COVER_NONE, FIG_COVER_MAYBE, FIG_COVER_SURE = range(3)
N_HYP = 7
#: how far (mm, along its normal) a block's side face may sit from its nominal place
#: without a side probe seeing another level (placement jitter, table-kit.md)
SIDE_TOL = 1.0
#: how far (image pixels) a side probe must lie from its level's top and bottom edges to
#: count in full (dev scenes: confident misreadings of clearly visible levels came from
#: probes closer than this to the next level, their colour mixed by blur and JPEG)
SIDE_MARGIN_PX = 2.0
WEAK_SIDE_WEIGHT = 0.15  # weight of the side probes that are not that robust
#: The two rows of side probes on a level's face sit this far (a fraction of the block's
#: height) above and below its middle at most, and closer where the level's band in the
#: image is thin, so that they keep SIDE_MARGIN_PX (and SIDE_ROW_SLACK_PX) from its edges
#: (dev scenes at 18-27 degrees of tilt: bands 5-7 px tall; probes at fixed heights all
#: fell within the margin, and lower levels read on weak probes alone were the commonest
#: error); never closer than MIN_SIDE_ROW_SPREAD.
SIDE_ROW_SPREAD = 0.2
#: Side probes sit this far (a fraction of the footprint's half) either side of a face's
#: middle. Each has a substitute nearer the face's corner (SUBSTITUTE_LATERAL), which
#: counts only as much as a nearer piece hides the probe it stands in for: a figure in
#: front (22 mm across) hides a face's middle and leaves its corners in view (dev
#: sequence: the grey bottom of a tower behind a figure, read from the black level
#: above in 32 frames), and probes there always would change every level's weight.
SIDE_LATERAL = 0.45
SUBSTITUTE_LATERAL = 0.75
MIN_SIDE_ROW_SPREAD = 0.05
SIDE_ROW_SLACK_PX = 0.25


class BoardOutOfView(ValueError):
    """The pose puts no probe of any cell inside the frame: nothing can be read."""


def solid_top_mm(kit: Kit, h: np.ndarray) -> np.ndarray:
    """Height (mm) of the top of a tower of ``h`` blocks (array): its blocks, and its chip
    when it carries one (``BlockSpec.carries_chip``); 0 for ``h`` = 0."""
    b = kit.blox
    h = np.asarray(h)
    chip = np.isin(h, [k for k in range(1, b.block.max_tower + 1) if b.block.carries_chip(k)])
    return h * b.block.height_mm + chip * b.chip.thickness_mm


def tallest_solid_mm(kit: Kit) -> float:
    """Height (mm) of the tallest thing that may stand on a space: a tower of any height
    with its chip if it carries one, or a figure."""
    heights = solid_top_mm(kit, np.arange(1, kit.blox.block.max_tower + 1))
    return float(max(heights.max(), kit.blox.figure.height_mm))


@dataclass
class BloxGeometry:
    version: int
    px: np.ndarray  # (N,2) probe pixels
    cell: np.ndarray  # (N,) cell index r*n+c of each probe
    orient: np.ndarray  # (N,) side-face orientation the probe sees (0..3, -y +x +y -x), -1 none
    e_p: np.ndarray  # entries (probe, hypothesis) with a label
    e_src: np.ndarray
    e_group: np.ndarray  # ((cell * N_HYP) + hyp) * N_GTYPES + gtype
    pair_p: np.ndarray  # occlusion pairs: probe, covering cell, minimum covering height (mm)
    pair_cell: np.ndarray
    pair_mm: np.ndarray
    pair_nominal_mm: np.ndarray  # the same for the nominal footprint (inf: its ray misses it)
    order: np.ndarray  # cells by distance from the camera's nadir
    space_pts: np.ndarray  # (n*n*K, 2) pixels of board points used for the light balance
    space_cell: np.ndarray
    cell_probes: np.ndarray  # (n*n,) probe count per cell
    centre_xy: np.ndarray  # (N,2) board mm (cell centre) of each probe, for the light field
    px_per_mm: float
    e_w: np.ndarray | None = None  # weight of each entry (side probes that placement jitter may spoil: less)
    table_pts: np.ndarray | None = None  # (K,2) pixels of table points around the board (its colour per frame)
    table_xy: np.ndarray | None = None  # (K,2) their board mm, clipped onto the board (where the light field lives)
    e_alt: np.ndarray | None = None  # ALT_*: which neighbouring level a side entry may see instead (jitter)
    table_behind: np.ndarray | None = None  # (N,) a table probe's ray passes over a farther cell (a piece may hide it)
    behind: np.ndarray | None = None  # (N,) the other space whose square each probe's ray reaches, else -1
    level_band_px: np.ndarray | None = None  # (cells, levels) image height of a level's side band (px; 0 unseen)
    pair_fig: np.ndarray | None = None  # per occlusion pair: how a figure on the covering cell covers it (FIG_COVER_*)
    substitutes: np.ndarray | None = None  # (M, 2) a substitute side probe, the probe it stands in for


def _hit_box(C: np.ndarray, d: np.ndarray, cx: float, cy: float, half: float, z_top: float) -> tuple[np.ndarray, np.ndarray]:
    """Entry t and face (0 top, 1 -y, 2 +x, 3 +y, 4 -x) of rays into the box
    [cx+-half] x [cy+-half] x [z_top, 0]; t = inf where missed."""
    lo = np.array([cx - half, cy - half, z_top])
    hi = np.array([cx + half, cy + half, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (lo[None] - C[None]) / d
        t2 = (hi[None] - C[None]) / d
    tmin = np.minimum(t1, t2)
    tmax = np.maximum(t1, t2)
    tmin = np.where(np.isnan(tmin), -np.inf, tmin)
    tmax = np.where(np.isnan(tmax), np.inf, tmax)
    enter = tmin.max(axis=1)
    leave = tmax.min(axis=1)
    axis = tmin.argmax(axis=1)
    hit = (enter <= leave) & (leave > 0)
    face = np.where(axis == 2, 0, np.where(axis == 1, np.where(d[:, 1] > 0, 1, 3), np.where(d[:, 0] > 0, 4, 2)))
    return np.where(hit, enter, np.inf), face


def _hit_cyl(C: np.ndarray, d: np.ndarray, cx: float, cy: float, R: float, z_top: float, z_bot: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """Entry t and part (0 cap, 1 side) of rays into a vertical cylinder; inf where missed."""
    tc = (z_top - C[2]) / d[:, 2]
    pc = C[None, :2] + d[:, :2] * tc[:, None]
    cap = (np.hypot(pc[:, 0] - cx, pc[:, 1] - cy) <= R) & (tc > 0)
    ox, oy = C[0] - cx, C[1] - cy
    a = d[:, 0] ** 2 + d[:, 1] ** 2
    b = 2 * (d[:, 0] * ox + d[:, 1] * oy)
    c = ox * ox + oy * oy - R * R
    disc = b * b - 4 * a * c
    with np.errstate(invalid="ignore", divide="ignore"):
        ts = (-b - np.sqrt(np.maximum(disc, 0))) / (2 * a)
    zs = C[2] + d[:, 2] * ts
    side = (disc > 0) & (ts > 0) & (zs >= z_top) & (zs <= z_bot)
    t = np.where(cap, tc, np.where(side, ts, np.inf))
    part = np.where(cap, 0, 1)
    return t, part


def _inside_convex(hull: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Points inside a convex polygon (any orientation)."""
    a = hull
    b = np.roll(hull, -1, axis=0)
    cross = (b[None, :, 0] - a[None, :, 0]) * (pts[:, None, 1] - a[None, :, 1]) - (
        b[None, :, 1] - a[None, :, 1]) * (pts[:, None, 0] - a[None, :, 0])
    return np.all(cross >= 0, axis=1) | np.all(cross <= 0, axis=1)


def _band_px(view: BoardView, fx: float, fy: float, bh: float, hmax: int) -> np.ndarray:
    """(hmax,) image height (px) of each tower level's band on a side face whose middle
    is at board point (fx, fy)."""
    z = -np.arange(hmax + 1) * bh
    edges = view.project(np.column_stack([np.full(hmax + 1, fx), np.full(hmax + 1, fy), z]))
    return np.linalg.norm(np.diff(edges, axis=0), axis=1)


def _side_rows(band_px: float, margin_px: float) -> tuple[float, float]:
    """Heights (fractions of the block's height) of the two rows of side probes on a
    level whose band is ``band_px`` tall in the image, ``margin_px`` (and
    SIDE_ROW_SLACK_PX) from its edges where it can (see SIDE_ROW_SPREAD)."""
    d = 0.5 - (margin_px + SIDE_ROW_SLACK_PX) / max(band_px, 1e-6)
    d = float(np.clip(d, MIN_SIDE_ROW_SPREAD, SIDE_ROW_SPREAD))
    return 0.5 - d, 0.5 + d


def _probe_points(view: BoardView, C: np.ndarray, cx: float, cy: float, s: float, half: float, bh: float, hmax: int,
                  chip_r: float, chip_t: float, fig_r: float, fig_z0: float, fig_z1: float, margin_px: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Image pixels worth looking at for one cell: points on every surface some
    hypothesis puts there (the square, each level's visible side faces, each height's
    chip ring -- the tallest tower's top face there, it has no chip -- and top-face
    corners, the figure's top), projected; (hmax,) the image height of each level's
    band on the side faces the camera sees, the tallest of them (0: none seen); and
    (K, 2) the substitute side probes near a face's corner with the points they stand
    in for (``SUBSTITUTE_LATERAL``), as indices into the points."""
    pts: list[tuple[float, float, float]] = []
    substitutes: list[tuple[int, int]] = []  # (point, the point it stands in for): see SUBSTITUTE_LATERAL
    f = np.linspace(-1, 1, 5) * (s / 2 - 4.0)
    pts += [(cx + a, cy + b, 0.0) for a in f for b in f]
    ang = np.linspace(0, 2 * np.pi, 8, endpoint=False) + np.pi / 8
    q = half - 2.5
    corners = [(q, q), (-q, q), (q, -q), (-q, -q), (q, 0.55 * q), (-q, -0.55 * q), (0.55 * q, -q), (-0.55 * q, q)]
    faces = []
    bands = []
    for nx, ny in ((0, -1), (1, 0), (0, 1), (-1, 0)):
        centre = np.array([cx + nx * half, cy + ny * half])
        if (C[0] - centre[0]) * nx + (C[1] - centre[1]) * ny > 0:
            faces.append((nx, ny))
            bands.append(_band_px(view, centre[0], centre[1], bh, hmax))
    for h in range(1, hmax + 1):
        z = -h * bh
        # The chip is the surest sign of a tower and of its height: a dense ring on it,
        # outside its printed value and inside its edge however the top block sits. The
        # tallest tower has no chip: the same ring on its top face, whose colour where
        # the lower heights put their chip tells it from them.
        z_ring = z - chip_t if h < hmax else z
        pts += [(cx + 0.72 * chip_r * np.cos(a + o), cy + 0.72 * chip_r * np.sin(a + o), z_ring)
                for o in (0.0, np.pi / 8) for a in ang]
        pts += [(cx + a, cy + b, z) for a, b in corners]
        for (nx, ny), band in zip(faces, bands):
            for sign in (-1.0, 1.0):
                for frac in _side_rows(float(band[h - 1]), margin_px):
                    zz = -(h - 1) * bh - frac * bh
                    primary = len(pts)
                    for lat in (SIDE_LATERAL, SUBSTITUTE_LATERAL):
                        pts.append((cx + nx * half + (sign * lat * half if ny else 0),
                                    cy + ny * half + (sign * lat * half if nx else 0), zz))
                    substitutes.append((primary + 1, primary))
    pts += [(cx + 0.75 * fig_r * np.cos(a), cy + 0.75 * fig_r * np.sin(a), fig_z1) for a in ang]
    d = np.array([C[0] - cx, C[1] - cy])
    d = d / max(float(np.linalg.norm(d)), 1e-6)
    for off in (-0.5, 0.0, 0.5):
        side = np.array([-d[1], d[0]]) * off * fig_r
        for frac in (0.3, 0.7):
            pts.append((cx + d[0] * fig_r * 0.95 + side[0], cy + d[1] * fig_r * 0.95 + side[1],
                        fig_z0 + frac * (fig_z1 - fig_z0)))
    band_max = np.max(bands, axis=0) if bands else np.zeros(hmax)
    return view.project(np.array(pts, float)), band_max, np.array(substitutes, int).reshape(-1, 2)


def build(view: BoardView, *, probes_per_cell: int = 0, side_tol: float | None = None,
          side_margin_px: float | None = None) -> BloxGeometry:
    kit: Kit = view.kit
    b = kit.blox
    side_tol = SIDE_TOL if side_tol is None else side_tol
    side_margin_px = SIDE_MARGIN_PX if side_margin_px is None else side_margin_px
    n, s = b.spaces, b.space_mm
    half = b.block.footprint_mm / 2
    bh = b.block.height_mm
    jitter = b.block.max_offset_mm + half * np.radians(b.block.max_rotation_deg)  # how far an edge may wander
    m_edge = 2.0  # probes this close to a face's nominal edge are not trusted (placement jitter)
    chip_r = b.chip.diameter_mm / 2
    chip_t = b.chip.thickness_mm
    fig = b.figure
    fig_top_h = fig.height_mm * fig.top_fraction
    fig_base_r = fig.base_mm / 2
    fig_r = fig.base_mm / 2 * 0.85  # the coloured top is a little narrower than the base
    fig_z0 = -(fig.height_mm - fig_top_h)
    fig_z1 = -fig.height_mm
    hmax = b.block.max_tower
    top_all = tallest_solid_mm(kit)
    C = view.camera_position()
    infl = half + jitter  # footprint grown by the jitter: what a neighbour may cover
    q = kit.markers.quiet_zone_mm + TABLE_MARGIN_MM
    markers = [(c[:, 0].min() - q, c[:, 1].min() - q, c[:, 0].max() + q, c[:, 1].max() + q)
               for c in (np.asarray(v, float) for v in kit.marker_corners("blox").values())]

    px_l, cell_l, orient_l, cxy_l, behind_l, table_behind_l, substitutes_l = [], [], [], [], [], [], []
    e_p, e_src, e_group, e_w, e_alt = [], [], [], [], []
    counts = np.zeros(n * n, int)
    band_px = np.zeros((n * n, hmax))
    base = 0
    W, H = view.intr.width, view.intr.height
    # Pixel density of the board, for the probe spacing.
    pp = view.project(np.array([[0, 0, 0], [n * s, 0, 0]], float))
    px_per_mm = float(np.linalg.norm(pp[1] - pp[0]) / (n * s))
    centres = np.array([((c + 0.5) * s, (r + 0.5) * s) for r in range(n) for c in range(n)])
    dist = np.hypot(centres[:, 0] - C[0], centres[:, 1] - C[1])
    for r in range(n):
        for c in range(n):
            cx, cy = (c + 0.5) * s, (r + 0.5) * s
            k = r * n + c
            pts, band_px[k], subs = _probe_points(view, C, cx, cy, s, half, bh, hmax, chip_r, chip_t, fig_r,
                                                  fig_z0, fig_z1, side_margin_px)
            keep = (pts[:, 0] >= 1) & (pts[:, 1] >= 1) & (pts[:, 0] <= W - 2) & (pts[:, 1] <= H - 2)
            # A substitute goes with the point it stands in for.
            keep[subs[:, 0]] &= keep[subs[:, 1]]
            subs = subs[keep[subs[:, 0]]]
            substitutes_l.append(base + (np.cumsum(keep) - 1)[subs])
            pts = pts[keep]
            N = len(pts)
            counts[k] = N
            if N == 0:
                continue
            d = view.rays(pts)
            tb = -C[2] / d[:, 2]
            pb = C[None, :2] + d[:, :2] * tb[:, None]
            own = (np.abs(pb[:, 0] - cx) <= s / 2 - 2.0) & (np.abs(pb[:, 1] - cy) <= s / 2 - 2.0)
            # The other space whose square the ray reaches (clear of its edges), if any.
            rc = np.floor(pb / s).astype(int)
            on_sq = np.all((rc >= 0) & (rc < n), axis=1) & np.all(np.abs(pb - (rc + 0.5) * s) <= s / 2 - 2.0, axis=1)
            behind = np.where(on_sq & ~own, rc[:, 1] * n + rc[:, 0], -1)
            table = _on_table(pb, n * s, markers)
            # Where a farther cell's piece may stand in the way, the table is predicted or
            # something unknown, whichever explains the probe better: those cells are
            # decided after this one, and a tower there, seen where a tall hypothesis
            # here would put its upper levels, must not argue for that hypothesis (dev
            # scenes: a tall tower read on an empty space in front of a tower of the far
            # row, at full confidence, for the table it hid).
            table_behind = np.zeros(N, bool)
            farther = dist > dist[k] + 1e-6
            if table.any() and farther.any():
                t_idx = np.nonzero(table)[0]
                table_behind[t_idx] = _crosses_any(C, d[t_idx], centres[farther], infl, top_all)
            table_behind_l.append(table_behind)
            board_src = np.where(own, OWN, np.where(table, TABLE, np.where(behind >= 0, BEHIND, UNKNOWN)))
            board_g = np.where(own, G_OWN, G_UNKNOWN)
            orient = np.full(N, -1)
            ones = np.ones(N, np.float32)
            none = np.zeros(N, np.int8)
            labels: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = [(board_src, board_g, ones, none)]
            for h in range(1, hmax + 1):
                src = board_src.copy()
                grp = board_g.copy()
                tbox, face = _hit_box(C, d, cx, cy, half, -h * bh)
                if kit.blox.block.carries_chip(h):
                    tchip, part = _hit_cyl(C, d, cx, cy, chip_r, -h * bh - chip_t, -h * bh)
                else:  # the tallest tower: its top face where the others have their chip
                    tchip, part = np.full(N, np.inf), np.ones(N, int)
                chip_first = tchip < np.minimum(tbox, tb)
                box_first = ~chip_first & (tbox < tb)
                # Anything the solid hides from the board is no longer the board. What it
                # may hide when its blocks sit off centre (the footprint grown by the kit's
                # offset and turn) is the square or something unknown (OWN_EDGE): else a
                # block a little off, covering a strip of the square the nominal solid
                # leaves free, would argue for a taller tower, whose larger image covers it.
                tgrow, _ = _hit_box(C, d, cx, cy, infl, -h * bh)
                src[(tgrow < tb) & own] = OWN_EDGE
                src[chip_first | box_first] = UNKNOWN
                grp[chip_first | box_first] = G_UNKNOWN
                pch = C[None] + d * np.where(np.isfinite(tchip), tchip, 0)[:, None]
                rch = np.hypot(pch[:, 0] - cx, pch[:, 1] - cy)
                ok_chip = chip_first & (part == 0) & (rch >= chip_r * 0.5) & (rch <= chip_r - 1.0)
                src[ok_chip] = CHIP
                grp[ok_chip] = G_CHIP
                pbx = C[None] + d * np.where(np.isfinite(tbox), tbox, 0)[:, None]
                lx, ly, lz = pbx[:, 0] - cx, pbx[:, 1] - cy, -pbx[:, 2]
                top = box_first & (face == 0) & (np.maximum(np.abs(lx), np.abs(ly)) <= half - m_edge)
                if kit.blox.block.carries_chip(h):  # clear of the chip, with the placement jitter to spare
                    top &= np.hypot(lx, ly) >= chip_r + jitter
                # (The tallest tower has no chip: its whole top face is its top block.)
                src[top] = BLK_TOP
                grp[top] = G_LEVEL0 + h - 1
                if not kit.blox.block.carries_chip(h):
                    # No chip says "a tower" in colours no space has: where its top face is
                    # seen in front of another space's square, that square's colour is
                    # what an empty space there would show (the board's colours are the
                    # blocks'), and is scored so (vision.blox: TOP_OVER_BOARD).
                    src[top & (behind >= 0)] = TOP_OVER_BOARD
                lateral = np.where((face == 1) | (face == 3), np.abs(lx), np.abs(ly))
                level = np.clip(np.floor(lz / bh).astype(int) + 1, 1, h)
                within = lz - (level - 1) * bh
                # A side face seen at a grazing angle moves a long way in the image when its
                # block sits a little off centre: keep the probes whose ray stays on this
                # level's face while the face moves by up to side_tol mm along its normal.
                k_n = np.where((face == 1) | (face == 3), np.abs(d[:, 1]), np.abs(d[:, 0])) / np.maximum(d[:, 2], 1e-6)
                # The others still count, with a small weight: they decide a level no
                # robust probe sees, at the low confidence such a reading deserves.
                robust = np.minimum(within, bh - within) * k_n >= side_tol
                side = box_first & (face > 0) & (lateral <= half - m_edge) & (within >= 2.0) & (within <= bh - 2.0)
                # Nor are those near a level's edge in the image: seen at a grazing angle a
                # level is a band a few pixels tall, and blur mixes the next level into it.
                px_per_mm = np.zeros(N)  # image shift of a point moved 1 mm up its face
                i = np.nonzero(side)[0]
                if len(i):
                    up = view.project(pbx[i] - [0.0, 0.0, 1.0]) - view.project(pbx[i])
                    px_per_mm[i] = np.hypot(up[:, 0], up[:, 1])
                robust &= np.minimum(within, bh - within) * px_per_mm >= side_margin_px
                wts = np.where(side & ~robust, np.float32(WEAK_SIDE_WEIGHT), np.float32(1.0)).astype(np.float32)
                src[side] = BLK_SIDE
                grp[side] = G_LEVEL0 + level[side] - 1
                orient = np.where(side, face - 1, orient)
                # Such a probe sees the level across its nearer edge when a block sits a
                # little off: it tells which colour is on one of two levels, and is scored
                # so (a pair of levels). (Above the top level is the same block's top face,
                # of the same colour; below the lowest, the board, which the shadow of the
                # tower makes too easy an explanation of a side face: neither is paired.)
                near_low = within < bh / 2
                alt = np.where(near_low, np.where(level > 1, ALT_DOWN, ALT_NONE),
                               np.where(level < h, ALT_UP, ALT_NONE)).astype(np.int8)
                alt = np.where(side & ~robust, alt, np.int8(ALT_NONE)).astype(np.int8)
                labels.append((src, grp, wts, alt))
            # Figure: the coloured top; rays through the clear body reach the board.
            src = board_src.copy()
            grp = board_g.copy()
            tf, part = _hit_cyl(C, d, cx, cy, fig_r, fig_z1, fig_z0)
            first = tf < tb
            # Seen through the clear body: the own space, tinted by the plastic.
            tbody, _ = _hit_cyl(C, d, cx, cy, fig_base_r + 1.5, fig_z0, 0.0)
            body = ~first & (tbody < tb) & own
            src[body] = OWN_BODY
            src[first] = UNKNOWN
            grp[first] = G_UNKNOWN
            pf = C[None] + d * np.where(np.isfinite(tf), tf, 0)[:, None]
            rf = np.hypot(pf[:, 0] - cx, pf[:, 1] - cy)
            cap = first & (part == 0) & (rf <= fig_r - 1.6)
            radial = np.stack([pf[:, 0] - cx, pf[:, 1] - cy], 1) / np.maximum(rf, 1e-6)[:, None]
            dxy = d[:, :2] / np.maximum(np.linalg.norm(d[:, :2], axis=1), 1e-9)[:, None]
            facing = -(radial * dxy).sum(axis=1)
            fside = first & (part == 1) & (facing > 0.5) & (-pf[:, 2] >= -fig_z0 + 1.5) & (-pf[:, 2] <= -fig_z1 - 1.5)
            src[cap] = FIG_CAP
            grp[cap] = G_FIG
            src[fside] = FIG_SIDE
            grp[fside] = G_FIG
            labels.insert(FIGURE, (src, grp, ones, none))
            for hyp, (src, grp, wts, alt) in enumerate(labels):
                e_p.append(base + np.arange(N))
                e_w.append(wts)
                e_alt.append(alt)
                e_src.append(src)
                e_group.append((k * N_HYP + hyp) * N_GTYPES + grp)
            px_l.append(pts)
            cell_l.append(np.full(N, k))
            behind_l.append(behind)
            orient_l.append(orient)
            cxy_l.append(np.tile([cx, cy], (N, 1)))
            base += N
    if not px_l:
        raise BoardOutOfView("the pose puts no part of the board in the frame")
    px = np.concatenate(px_l)
    cell = np.concatenate(cell_l)
    # Cells nearer the nadir are decided first and may hide the farther ones.
    order = np.argsort(dist, kind="stable")
    # Occlusion pairs.
    d_all = view.rays(px)
    pair_p, pair_cell, pair_mm, pair_nominal_mm, pair_fig = [], [], [], [], []
    fig_h = fig.height_mm
    fig_reach = fig_base_r + b.block.max_offset_mm  # table-kit.md gives no placement tolerance for figures
    for a in range(n * n):
        ax, ay = centres[a]
        nearer = dist[cell] > dist[a] + 1e-6
        idx = np.nonzero(nearer)[0]
        if len(idx) == 0:
            continue
        dd = d_all[idx]
        need, cross = _cover_height(C, dd, ax, ay, infl, top_all)
        if not cross.any():
            continue
        # The nominal footprint covers a subset of what the grown one may cover.
        need_nominal, cross_nominal = _cover_height(C, dd, ax, ay, half, top_all)
        sel = np.nonzero(cross)[0]
        pair_p.append(idx[sel])
        pair_cell.append(np.full(len(sel), a))
        pair_mm.append(need[sel])
        pair_nominal_mm.append(np.where(cross_nominal, need_nominal, np.inf)[sel])
        d_sel = dd[sel]
        # The clear lower body counts as covering: what shows through it is tinted.
        fig_sure = np.isfinite(_hit_cyl(C, d_sel, ax, ay, fig_base_r, -fig_h, 0.0)[0])
        fig_maybe = np.isfinite(_hit_cyl(C, d_sel, ax, ay, fig_reach, -fig_h, 0.0)[0])
        pair_fig.append(np.where(fig_sure, FIG_COVER_SURE, np.where(fig_maybe, FIG_COVER_MAYBE, FIG_COVER_NONE)))
    f = np.array([0.22, 0.5, 0.78])
    lat = np.array([(u, v) for v in f for u in f]) * s
    space = []
    space_cell = []
    for r in range(n):
        for c in range(n):
            # Off-centre points: tower marks sit near the centre.
            pts = lat[[0, 1, 2, 3, 5, 6, 7, 8]] + [c * s, r * s]
            space.append(view.project(pts))
            space_cell.append(np.full(len(pts), r * n + c))
    # Table points all round the board, a little beyond its edge, away from the markers.
    w = n * s
    t = np.linspace(0.08, 0.92, 12) * w
    ring = []
    for off in (6.0, 14.0):
        ring += [(x, -off) for x in t] + [(x, w + off) for x in t] + [(-off, y) for y in t] + [(w + off, y) for y in t]
    ring_a = np.array(ring, float)
    ring_a = ring_a[_on_table(ring_a, w, markers)]
    tpx = view.project(np.column_stack([ring_a, np.zeros(len(ring_a))]))
    inside = (tpx[:, 0] >= 1) & (tpx[:, 1] >= 1) & (tpx[:, 0] <= W - 2) & (tpx[:, 1] <= H - 2)
    tpx, txy = tpx[inside], np.clip(ring_a[inside], 0.0, w)
    return BloxGeometry(
        view.version, px.astype(np.float32), cell, np.concatenate(orient_l), np.concatenate(e_p).astype(np.int32),
        np.concatenate(e_src).astype(np.int8), np.concatenate(e_group).astype(np.int32),
        np.concatenate(pair_p).astype(np.int32) if pair_p else np.zeros(0, np.int32),
        np.concatenate(pair_cell).astype(np.int32) if pair_cell else np.zeros(0, np.int32),
        np.concatenate(pair_mm).astype(np.float32) if pair_mm else np.zeros(0, np.float32),
        np.concatenate(pair_nominal_mm).astype(np.float32) if pair_nominal_mm else np.zeros(0, np.float32),
        order, np.concatenate(space).astype(np.float32), np.concatenate(space_cell), counts,
        np.concatenate(cxy_l), px_per_mm, np.concatenate(e_w).astype(np.float32), tpx.astype(np.float32),
        txy, np.concatenate(e_alt).astype(np.int8),
        table_behind=np.concatenate(table_behind_l), behind=np.concatenate(behind_l), level_band_px=band_px,
        pair_fig=np.concatenate(pair_fig).astype(np.int8) if pair_fig else np.zeros(0, np.int8),
        substitutes=np.concatenate(substitutes_l).astype(np.int32),
    )


def _cover_height(C: np.ndarray, d: np.ndarray, ax: float, ay: float, half: float, top: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    """For rays ``d`` (N,3) from the camera ``C``: the lowest height (mm) a solid of
    footprint [ax+-half] x [ay+-half] must reach to cover each ray before the ray meets
    the board, and whether the ray passes over that footprint below ``top`` at all."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tx1 = (ax - half - C[0]) / d[:, 0]
        tx2 = (ax + half - C[0]) / d[:, 0]
        ty1 = (ay - half - C[1]) / d[:, 1]
        ty2 = (ay + half - C[1]) / d[:, 1]
    t_in = np.maximum(np.minimum(tx1, tx2), np.minimum(ty1, ty2))
    t_out = np.minimum(np.maximum(tx1, tx2), np.maximum(ty1, ty2))
    tb = -C[2] / d[:, 2]
    t_top = (-top - 1 - C[2]) / d[:, 2]
    cross = (t_in < t_out) & (t_in < tb) & (t_out > t_top)
    z_out = C[2] + d[:, 2] * np.minimum(t_out, tb)
    return np.maximum(-z_out, 0.0), cross


def _crosses_any(C: np.ndarray, d: np.ndarray, centres: np.ndarray, half: float, top: float) -> np.ndarray:
    """Whether each ray ``d`` (N,3) from the camera ``C`` passes, before it meets the
    board plane, through any of the boxes of footprint ``centres`` (K,2) +-``half`` and
    height ``top`` (where a piece standing on one of those cells may be)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d[:, :2]
        t1 = (centres[None, :, :] - half - C[None, None, :2]) * inv[:, None, :]
        t2 = (centres[None, :, :] + half - C[None, None, :2]) * inv[:, None, :]
    t_in = np.minimum(t1, t2).max(axis=2)
    t_out = np.maximum(t1, t2).min(axis=2)
    tb = (-C[2] / d[:, 2])[:, None]
    t_top = ((-top - C[2]) / d[:, 2])[:, None]
    return ((t_in < t_out) & (t_in < tb) & (t_out > t_top)).any(axis=1)


def _on_table(xy: np.ndarray, w: float, markers: list[tuple[float, float, float, float]]) -> np.ndarray:
    """Board-plane points (N,2) on the table: beyond the board's edge by TABLE_MARGIN_MM,
    outside every marker's square and quiet zone (``markers``: grown boxes)."""
    m = TABLE_MARGIN_MM
    out = (xy[:, 0] < -m) | (xy[:, 1] < -m) | (xy[:, 0] > w + m) | (xy[:, 1] > w + m)
    for x0, y0, x1, y1 in markers:
        out &= ~((xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1))
    return out


#: chip-rim profiles (see :func:`chip_rim_pixels`): directions round the chip ...
RIM_DIRECTIONS = 32
#: ... and radii sampled along each, as fractions of the chip's radius (clear of its
#: printed value inside; the outer end is further capped to stay on the top face)
RIM_INNER, RIM_OUTER, RIM_STEP = 0.7, 1.25, 0.025


def rim_radii(kit: Kit) -> np.ndarray:
    """Radii (mm, in the plane of a chip's top) of the chip-rim profiles: from inside the
    chip, clear of its printed value, to outside its rim but on the top face however far
    the top block sits off centre (its footprint's half less the kit's offset)."""
    b = kit.blox
    R = b.chip.diameter_mm / 2
    outer = min(RIM_OUTER * R, b.block.footprint_mm / 2 - b.block.max_offset_mm)
    return np.arange(RIM_INNER * R, outer + 1e-6, RIM_STEP * R)


def rim_angles() -> np.ndarray:
    """The directions (radians) of the chip-rim profiles, in the board frame."""
    return np.linspace(0, 2 * np.pi, RIM_DIRECTIONS, endpoint=False)


def chip_rim_pixels(view: BoardView, r: int, c: int, h: int) -> np.ndarray:
    """Image pixels (RIM_DIRECTIONS, len(rim_radii), 2) of radial profiles across the chip's
    rim of a tower of ``h`` blocks on cell (r, c), laid out in the plane of that chip's
    top around the cell's centre: where a chip of the kit's size would show its rim if
    the tower had that height. The rim found along them measures the chip's radius in
    that plane, which tells the real height (:func:`chip_radius_in_plane`)."""
    b = view.kit.blox
    s = b.space_mm
    z = -(h * b.block.height_mm + b.chip.thickness_mm)
    a = rim_angles()
    rho = rim_radii(view.kit)
    x = (c + 0.5) * s + np.cos(a)[:, None] * rho[None, :]
    y = (r + 0.5) * s + np.sin(a)[:, None] * rho[None, :]
    pts = np.stack([x.ravel(), y.ravel(), np.full(x.size, z)], 1)
    return view.project(pts).reshape(RIM_DIRECTIONS, len(rho), 2).astype(np.float32)


def chip_radius_in_plane(view: BoardView, h_plane: int, h: np.ndarray) -> np.ndarray:
    """Radius (mm) that the chip of a tower of ``h`` blocks shows in the plane of the chip
    top of an ``h_plane`` tower. Central projection from the camera between two
    horizontal planes is a uniform scaling about the camera's nadir, so a circle stays
    a circle, scaled by the ratio of the planes' depths below the camera."""
    b = view.kit.blox
    cz = float(view.camera_position()[2])
    z_plane = -(h_plane * b.block.height_mm + b.chip.thickness_mm)
    z_chip = -(np.asarray(h, float) * b.block.height_mm + b.chip.thickness_mm)
    return b.chip.diameter_mm / 2 * (z_plane - cz) / (z_chip - cz)


#: the chip's print (see :func:`chip_print_pixels`) is sampled every this many mm of the chip's top
PRINT_STEP_MM = 0.4


def print_window_mm(kit: Kit) -> float:
    """Radius (mm) of the disc read for the chip's printed value around the cell's centre:
    inside the chip however far the top block (and the chip on it) sits off centre (the
    kit's block offset), with half a millimetre to spare for the rim's blur."""
    b = kit.blox
    return b.chip.diameter_mm / 2 - b.block.max_offset_mm - 0.5


def chip_print_pixels(view: BoardView, r: int, c: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Image pixels (n, n, 2) of a square grid in the plane of the chip top of a tower of
    ``h`` blocks on cell (r, c), centred on the cell, rows along +y (toward the near
    edge), columns along +x, every ``PRINT_STEP_MM``; and the mask (n, n) of the grid's
    points within :func:`print_window_mm` of the centre (on the chip, clear of its rim).
    Sampling the frame there rectifies the chip's top: its printed value seen from
    straight above."""
    b = view.kit.blox
    s = b.space_mm
    w = print_window_mm(view.kit)
    u = np.arange(-w, w + 1e-6, PRINT_STEP_MM)
    ux, uy = np.meshgrid(u, u)
    z = -(h * b.block.height_mm + b.chip.thickness_mm)
    pts = np.stack([(c + 0.5) * s + ux.ravel(), (r + 0.5) * s + uy.ravel(), np.full(ux.size, z)], 1)
    return view.project(pts).reshape(*ux.shape, 2).astype(np.float32), np.hypot(ux, uy) <= w
