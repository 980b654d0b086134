"""Pictures of a battle: terrain, battalions, their facing and their fire.

Everything is drawn with Pillow from plain arrays, so the same code renders a
live env (:func:`draw_battle`) and a recorded replay (:mod:`envs.rendering.replay`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from envs.sim import constants as C

TEAM_COLOURS = ((25, 60, 210), (210, 25, 25))
ROUTED_COLOURS = ((150, 170, 235), (240, 160, 160))
DESTROYED_COLOUR = (90, 90, 90)
FIRE_COLOUR = (255, 200, 40)
LOW_GROUND = np.array((150, 190, 110), np.float32)
HIGH_GROUND = np.array((170, 140, 90), np.float32)
WOODS = np.array((40, 100, 45), np.float32)
WATER = np.array((70, 120, 200), np.float32)
ROAD = np.array((200, 180, 140), np.float32)
MARKING = (245, 245, 235)
FRONTAGE_M = 80.0
"""Drawn width of a battalion in line (about 700 men in two ranks, exaggerated)."""
DEPTH_M = 22.0
SHAPES = {  # (arm, formation) -> (frontage, depth) in metres, drawn at full strength
    (C.INFANTRY, C.LINE): (FRONTAGE_M, DEPTH_M), (C.INFANTRY, C.COLUMN): (32.0, 60.0),
    (C.INFANTRY, C.SQUARE): (42.0, 42.0), (C.CAVALRY, C.LINE): (FRONTAGE_M, DEPTH_M),
    (C.CAVALRY, C.COLUMN): (32.0, 60.0), (C.ARTILLERY, C.LINE): (50.0, 18.0),
    (C.ARTILLERY, C.LIMBERED): (18.0, 50.0),
}
"""How each arm in each formation is drawn: a line wide and shallow, a column narrow and
deep, a square square (hollow), a battery short, limbered guns strung out in file.
Cavalry carries a diagonal stripe and guns a dot, as on a staff map."""
STATUS_HEIGHT = 16


@dataclass(frozen=True)
class Frame:
    """One moment of one battle, as plain per-unit arrays of shape (U,)."""

    x: np.ndarray
    y: np.ndarray
    theta: np.ndarray
    strength: np.ndarray
    morale: np.ndarray
    routed: np.ndarray
    destroyed: np.ndarray
    team: np.ndarray
    step: int
    volley: np.ndarray | None = None
    target: np.ndarray | None = None
    arm: np.ndarray | None = None
    """Each unit's arm code (None: all infantry)."""
    formation: np.ndarray | None = None
    """Each unit's formation code (None: all in line)."""


def terrain_image(elevation: np.ndarray, cover: np.ndarray, size: tuple[int, int],
                  going: np.ndarray | None = None) -> Image.Image:
    """Shaded map: green lowland to brown heights, lit from the north-west, with contour
    lines every fifth of the highest hill, woods darkening the ground, and where a
    ``going`` grid is given, impassable water in blue, slow going (streams, fords,
    marshes) in pale blue and roads (going above 1) in tan."""
    width, height = size
    # Row 0 of the grid is the south edge; image row 0 is the top.
    def upsample(grid: np.ndarray) -> np.ndarray:
        image = Image.fromarray(np.flipud(np.asarray(grid, np.float32)), "F")
        return np.asarray(image.resize(size, Image.Resampling.BILINEAR))

    e = np.clip(upsample(elevation), 0, 1)
    c = np.clip(upsample(cover), 0, 1)
    gy, gx = np.gradient(e * 40.0)
    shade = np.clip(1.0 + 0.6 * (-gx + gy) / np.sqrt(1 + gx * gx + gy * gy), 0.6, 1.3)
    # Bilinear slopes are constant per cell; blurring the light hides the facets.
    blur = ImageFilter.GaussianBlur(radius=max(2, width // 60))
    grey = Image.fromarray(((shade - 0.6) / 0.7 * 255).astype(np.uint8), "L").filter(blur)
    shade = 0.6 + np.asarray(grey, np.float32) / 255 * 0.7
    colour = (LOW_GROUND * (1 - e[..., None]) + HIGH_GROUND * e[..., None]) * shade[..., None]
    colour = colour * (1 - 0.75 * c[..., None]) + WOODS * 0.75 * c[..., None]
    band = np.floor(e * 5)
    contour = (band != np.roll(band, 1, axis=0)) | (band != np.roll(band, 1, axis=1))
    contour[0, :] = contour[:, 0] = False
    colour[contour] = colour[contour] * 0.6
    if going is not None:
        # Nearest-neighbour: water and roads keep their cells' edges.
        cells = np.asarray(Image.fromarray(np.flipud(np.asarray(going, np.float32)), "F")
                           .resize(size, Image.Resampling.NEAREST))
        colour[cells <= 0] = WATER
        wet = (cells > 0) & (cells < 1)  # streams, fords and marshes
        colour[wet] = colour[wet] * 0.45 + WATER * 0.55
        colour[cells > 1] = colour[cells > 1] * 0.4 + ROAD * 0.6
    return Image.fromarray(np.clip(colour, 0, 255).astype(np.uint8), "RGB")


def draw_frame(background: Image.Image, frame: Frame, width: float, height: float,
               unit_scale: float = 1.0) -> np.ndarray:
    """Draw ``frame`` over a terrain ``background``; returns an (H, W, 3) uint8 array.

    Units are drawn :data:`SHAPES` times ``unit_scale`` (a big field's units stand for
    brigades and divisions, drawn larger so they can be seen).

    A status strip of :data:`STATUS_HEIGHT` pixels above the map names the step
    and each side's strength.
    """
    image = Image.new("RGB", (background.width, background.height + STATUS_HEIGHT),
                      (250, 250, 245))
    image.paste(background, (0, STATUS_HEIGHT))
    draw = ImageDraw.Draw(image)
    px, py = background.width / width, background.height / height

    def to_pixels(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.stack([x * px, image.height - y * py], axis=-1)

    if frame.volley is not None and frame.target is not None:
        for shooter in np.nonzero((frame.volley > 1e-3) & (frame.target >= 0))[0]:
            target = frame.target[shooter]
            a = to_pixels(frame.x[shooter], frame.y[shooter])
            b = to_pixels(frame.x[target], frame.y[target])
            draw.line([tuple(a), tuple(b)], fill=FIRE_COLOUR,
                      width=max(1, int(round(1 + 4 * float(frame.volley[shooter])))))

    for u in range(len(frame.x)):
        arm = C.INFANTRY if frame.arm is None else int(frame.arm[u])
        formation = C.LINE if frame.formation is None else int(frame.formation[u])
        front, depth = SHAPES.get((arm, formation), (FRONTAGE_M, DEPTH_M))
        front, depth = front * unit_scale, depth * unit_scale
        along = np.array([np.cos(frame.theta[u]), np.sin(frame.theta[u])])
        across = np.array([-along[1], along[0]])
        half_front = 0.5 * front * max(float(frame.strength[u]), 0.15)
        centre = np.array([frame.x[u], frame.y[u]])
        corners = [centre + s * half_front * across + d * depth * along
                   for s, d in ((-1, 0.5), (1, 0.5), (1, -0.5), (-1, -0.5))]
        polygon = [tuple(to_pixels(*c)) for c in corners]
        team = int(frame.team[u])
        if frame.destroyed[u]:
            fill = DESTROYED_COLOUR
        elif frame.routed[u]:
            fill = ROUTED_COLOURS[team]
        else:
            fill = TEAM_COLOURS[team]
        hollow = formation == C.SQUARE or (arm == C.ARTILLERY and formation == C.LIMBERED)
        draw.polygon(polygon, fill=None if hollow else fill, outline=fill if hollow else
                     (20, 20, 20), width=3 if hollow else 1)
        if arm == C.CAVALRY:
            draw.line([polygon[0], polygon[2]], fill=MARKING, width=2)
        elif arm == C.ARTILLERY:
            cx, cy = to_pixels(*centre)
            draw.ellipse([cx - 2, cy - 2, cx + 2, cy + 2], fill=MARKING if not hollow else fill)
        if not (frame.destroyed[u] or frame.routed[u]):
            # An arrowhead on the front shows which way the unit faces.
            tip = centre + along * (depth * 0.5 + 16 * unit_scale)
            left = centre + along * depth * 0.5 + across * 9 * unit_scale
            right = centre + along * depth * 0.5 - across * 9 * unit_scale
            draw.polygon([tuple(to_pixels(*p)) for p in (tip, left, right)], fill=fill,
                         outline=(20, 20, 20))
        # Strength (dark) and morale (light) bars under the unit.
        bx, by = to_pixels(frame.x[u], frame.y[u] - 30 * unit_scale)
        draw.rectangle([bx - 15, by, bx + 15, by + 3], fill=(255, 255, 255))
        draw.rectangle([bx - 15, by, bx - 15 + 30 * float(frame.strength[u]), by + 3],
                       fill=(30, 30, 30))
        draw.rectangle([bx - 15, by + 4, bx + 15, by + 7], fill=(255, 255, 255))
        draw.rectangle([bx - 15, by + 4, bx - 15 + 30 * float(frame.morale[u]), by + 7],
                       fill=(230, 180, 40))
    status = _status(frame)
    draw.text((4, 2), f"step {frame.step}   {status}", fill=(0, 0, 0))
    return np.asarray(image)


def _status(frame: Frame) -> str:
    """The status line: every unit's strength in a small battle, each side's in a big one."""
    if len(frame.x) <= 4:
        return "   ".join(
            f"{('Blue', 'Red')[int(frame.team[u])]} {float(frame.strength[u]):.0%}"
            + (" routed" if frame.routed[u] else " destroyed" if frame.destroyed[u] else "")
            for u in range(len(frame.x)))
    sides = []
    for team, name in enumerate(("Blue", "Red")):
        mine = frame.team == team
        out = int(np.count_nonzero(mine & (frame.routed | frame.destroyed)))
        sides.append(f"{name} {int(mine.sum())} units, {float(frame.strength[mine].mean()):.0%}"
                     + (f", {out} broken" if out else ""))
    return "   ".join(sides)


def palette_for(background: Image.Image) -> Image.Image:
    """A GIF palette: the team and fire colours exactly, the rest fitted to the map."""
    fixed = [*TEAM_COLOURS, *ROUTED_COLOURS, DESTROYED_COLOUR, FIRE_COLOUR, (20, 20, 20),
             (0, 0, 0), (255, 255, 255), (250, 250, 245), (30, 30, 30), (230, 180, 40),
             MARKING]
    fitted = background.quantize(256 - len(fixed), method=Image.Quantize.MEDIANCUT)
    colours = [c for rgb in fixed for c in rgb] + fitted.getpalette()[: 3 * (256 - len(fixed))]
    palette = Image.new("P", (1, 1))
    palette.putpalette(colours)
    return palette


def delivered_fire(events, battle: int) -> tuple[np.ndarray, np.ndarray]:
    """Battle ``battle``'s fire of a step as pictures show it: each unit's readiness
    spent and its target where the unit removed strength in the step, 0 and -1
    elsewhere. An order to fire that cannot hurt (guns limbered) spends readiness in the
    engine (:class:`~envs.sim.engine.StepEvents`) but is not fire anyone would see."""
    hurt = events.damage_dealt[battle] > 0
    return (np.where(hurt, events.volley[battle], 0).astype(np.float32),
            np.where(hurt, events.target[battle], -1).astype(np.int8))


def draw_battle(state, battle: int, config, size: int = 480, events=None) -> np.ndarray:
    """Picture of battle ``battle`` of a :class:`~envs.sim.state.BattleState`."""
    volley, target = (None, None) if events is None else delivered_fire(events, battle)
    frame = Frame(
        x=state.x[battle], y=state.y[battle], theta=state.theta[battle],
        strength=state.strength[battle], morale=state.morale[battle],
        routed=state.routed[battle], destroyed=state.destroyed[battle], team=state.team,
        step=int(state.step[battle]), volley=volley, target=target, arm=state.arm,
        formation=state.formation[battle])
    height = max(1, int(round(size * config.map_height / config.map_width)))
    background = terrain_image(state.elevation[battle], state.cover[battle], (size, height),
                               state.going[battle])
    return draw_frame(background, frame, config.map_width, config.map_height)
