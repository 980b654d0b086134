"""Pictures of a battle: terrain, battalions, their facing and their fire.

Everything is drawn with Pillow from plain arrays, so the same code renders a
live env (:func:`draw_battle`) and a recorded replay (:mod:`envs.rendering.replay`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw

TEAM_COLOURS = ((40, 80, 200), (200, 40, 40))
ROUTED_COLOURS = ((150, 170, 230), (235, 160, 160))
DESTROYED_COLOUR = (90, 90, 90)
FIRE_COLOUR = (255, 200, 40)
LOW_GROUND = np.array((150, 190, 110), np.float32)
HIGH_GROUND = np.array((170, 140, 90), np.float32)
WOODS = np.array((40, 100, 45), np.float32)
FRONTAGE_M = 70.0
"""Drawn width of a battalion in line (about 700 men two ranks deep, exaggerated)."""
DEPTH_M = 14.0


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


def terrain_image(elevation: np.ndarray, cover: np.ndarray, size: tuple[int, int]) -> Image.Image:
    """Shaded map: green lowland to brown heights, woods darkening the ground."""
    e = np.clip(elevation, 0, 1)[..., None]
    c = np.clip(cover, 0, 1)[..., None]
    colour = (LOW_GROUND * (1 - e) + HIGH_GROUND * e) * (1 - 0.8 * c) + WOODS * 0.8 * c
    # Row 0 of the grid is the south edge; image row 0 is the top.
    grid = Image.fromarray(np.flipud(colour).astype(np.uint8), "RGB")
    return grid.resize(size, Image.Resampling.BILINEAR)


def draw_frame(background: Image.Image, frame: Frame, width: float, height: float) -> np.ndarray:
    """Draw ``frame`` over a terrain ``background``; returns an (H, W, 3) uint8 array."""
    image = background.copy()
    draw = ImageDraw.Draw(image)
    px, py = image.width / width, image.height / height

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
        along = np.array([np.cos(frame.theta[u]), np.sin(frame.theta[u])])
        across = np.array([-along[1], along[0]])
        half_front = 0.5 * FRONTAGE_M * max(float(frame.strength[u]), 0.15)
        centre = np.array([frame.x[u], frame.y[u]])
        corners = [centre + s * half_front * across + d * DEPTH_M * along
                   for s, d in ((-1, 0.5), (1, 0.5), (1, -0.5), (-1, -0.5))]
        polygon = [tuple(to_pixels(*c)) for c in corners]
        team = int(frame.team[u])
        if frame.destroyed[u]:
            fill = DESTROYED_COLOUR
        elif frame.routed[u]:
            fill = ROUTED_COLOURS[team]
        else:
            fill = TEAM_COLOURS[team]
        draw.polygon(polygon, fill=fill, outline=(20, 20, 20))
        if not (frame.destroyed[u] or frame.routed[u]):
            tip = to_pixels(*(centre + along * (DEPTH_M + 18)))
            base = to_pixels(*(centre + along * DEPTH_M * 0.5))
            draw.line([tuple(base), tuple(tip)], fill=(20, 20, 20), width=2)
        # Strength (dark) and morale (light) bars under the unit.
        bx, by = to_pixels(frame.x[u], frame.y[u] - 30)
        draw.rectangle([bx - 15, by, bx + 15, by + 3], fill=(255, 255, 255))
        draw.rectangle([bx - 15, by, bx - 15 + 30 * float(frame.strength[u]), by + 3],
                       fill=(30, 30, 30))
        draw.rectangle([bx - 15, by + 4, bx + 15, by + 7], fill=(255, 255, 255))
        draw.rectangle([bx - 15, by + 4, bx - 15 + 30 * float(frame.morale[u]), by + 7],
                       fill=(230, 180, 40))
    draw.text((6, 4), f"step {frame.step}", fill=(0, 0, 0))
    return np.asarray(image)


def draw_battle(state, battle: int, config, size: int = 480, events=None) -> np.ndarray:
    """Picture of battle ``battle`` of a :class:`~envs.sim.state.BattleState`."""
    frame = Frame(
        x=state.x[battle], y=state.y[battle], theta=state.theta[battle],
        strength=state.strength[battle], morale=state.morale[battle],
        routed=state.routed[battle], destroyed=state.destroyed[battle], team=state.team,
        step=int(state.step[battle]),
        volley=None if events is None else events.volley[battle],
        target=None if events is None else events.target[battle])
    height = max(1, int(round(size * config.map_height / config.map_width)))
    background = terrain_image(state.elevation[battle], state.cover[battle], (size, height))
    return draw_frame(background, frame, config.map_width, config.map_height)
