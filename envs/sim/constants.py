"""Every constant of the battle model, in one place.

Each value is explained in ``docs/simulation.md``; :class:`envs.sim.config.BattleConfig`
uses these as its defaults, so a wargame designer can change any of them per run
without editing code. Units: metres, seconds, radians; a *step* lasts ``DT`` seconds.
"""

from __future__ import annotations

import math

# --- time and space -------------------------------------------------------
DT = 0.1
"""Seconds of battle per simulation step."""
MAP_WIDTH = 1000.0
"""Default battlefield width in metres (west to east)."""
MAP_HEIGHT = 1000.0
"""Default battlefield height in metres (south to north)."""
MAX_STEPS = 500
"""Steps before a battle is cut off as a draw."""
MAX_STEPS_LIMIT = 1_000_000
"""Largest ``max_steps`` a battle may have (28 hours of battle; the step counter is int32)."""
MAP_SIZE_RANGE = (10.0, 100_000.0)
"""Smallest and largest map width or height in metres: from two strides at full speed to
100 km, where float32 positions still resolve a centimetre."""
SEED_BOUND = 2**63
"""Seeds are integers in ``[0, SEED_BOUND)``, like the fresh seeds drawn for unseeded resets."""

# --- orders -----------------------------------------------------------------
ACTION_NAMES = ("move", "rotate", "fire")
"""A battalion's order, in this order: ``move`` in [-1, 1] (negative steps back),
``rotate`` in [-1, 1] (positive is counter-clockwise) and ``fire`` intensity in [0, 1]."""
ACTION_DIM = len(ACTION_NAMES)
"""Numbers in one battalion's order."""
ACTION_LOW = (-1.0, -1.0, 0.0)
"""Lower corner of the action box; finite orders outside the box are clipped into it."""
ACTION_HIGH = (1.0, 1.0, 1.0)
"""Upper corner of the action box."""

# --- movement ---------------------------------------------------------------
MAX_SPEED = 50.0
"""Top speed in m/s, so a battalion covers at most ``MAX_SPEED * DT`` = 5 m per step."""
BACKWARD_SPEED_FRACTION = 0.5
"""Stepping back in order is slower than advancing."""
MAX_TURN_RATE = 0.1
"""Radians a battalion can wheel per step (about 31 steps for an about-face)."""
HILL_SPEED_FACTOR = 0.5
"""Speed multiplier on the highest ground of a map; it rises linearly to 1 on the lowest."""
FOREST_SPEED_PENALTY = 0.3
"""Fraction of speed lost in full cover (woods break up the line)."""

# --- fire -------------------------------------------------------------------
FIRE_RANGE = 200.0
"""Musket range in metres: beyond it a volley hits nothing."""
HIT_FALLOFF_EXPONENT = 2.0
"""Hit chance is ``(1 - distance / FIRE_RANGE) ** HIT_FALLOFF_EXPONENT``
(:func:`envs.sim.kernels.hit_chance`): 1 at point blank, 0.25 at half range, 0.04 at
160 m, so long-range fire is mostly wasted."""
FIRE_ARC = math.pi / 4
"""Half-angle of the frontal arc a battalion can fire into (45 degrees either side)."""
VOLLEY_DAMAGE = 0.5
"""Strength removed from a target by a full volley (readiness 1) of a full-strength
battalion at point-blank range, frontal, in the open, standing still."""
RELOAD_RATE = 0.05
"""Readiness regained per step: continuous fire delivers 0.05 of a volley per step, so
a volley held until the right moment is worth 20 steps of ragged firing."""
MOVING_FIRE_PENALTY = 0.5
"""Accuracy lost at full marching speed (fire on the move is ragged)."""
TURNING_FIRE_PENALTY = 0.5
"""Accuracy lost while wheeling at the full turn rate."""
FLANK_DAMAGE_MULTIPLIER = 1.5
"""Damage multiplier for fire arriving between 45 and 135 degrees off the target's front."""
REAR_DAMAGE_MULTIPLIER = 2.0
"""Damage multiplier for fire arriving from behind (beyond 135 degrees)."""
FRONT_HALF_ANGLE = math.pi / 4
"""Fire arriving within this angle of a target's front counts as frontal."""
REAR_HALF_ANGLE = 3 * math.pi / 4
"""Fire arriving more than this angle off a target's front counts as from the rear."""
COVER_PROTECTION = 0.6
"""Fraction of damage absorbed in full cover (dense woods, farm walls)."""
HEIGHT_ADVANTAGE = 0.3
"""Damage multiplier gained per unit of relative elevation the shooter has over its target
(firing down a full hill gives x1.3; firing up it gives x0.7)."""
EYE_HEIGHT = 0.05
"""Height of a battalion above the ground, as a fraction of the map's highest hill,
used for line of sight: a crest higher than the sight line hides what is behind it."""
LOS_SAMPLES = 12
"""Points sampled along a sight line to look for a blocking crest (every 15 m at
musket range; hills are at least 35 m across)."""

# --- morale -----------------------------------------------------------------
MORALE_PER_DAMAGE = 1.5
"""Morale lost per unit of strength lost to frontal fire."""
FLANK_MORALE_EXTRA = 1.0
"""Extra morale lost per unit of damage taken from the flank."""
REAR_MORALE_EXTRA = 2.0
"""Extra morale lost per unit of damage taken from the rear."""
VOLLEY_SHOCK = 4.0
"""Morale lost grows with the square of the strength lost in one step: a close
volley taking 20 % of a battalion costs 0.16 morale on top of the casualties'
0.3, while the same losses spread over many steps cost almost nothing extra."""
MORALE_RECOVERY = 0.01
"""Morale regained per step without taking fire."""
ROUT_THRESHOLD = 0.25
"""Below this morale a battalion may rout: each step with probability ``1 - morale / 0.25``."""
DESTROYED_THRESHOLD = 0.01
"""A battalion with this strength or less is destroyed."""

# --- deployment and terrain generation --------------------------------------
BLUE_DEPLOY_X = (0.1, 0.4)
"""Blue deploys in this band of the map width (west)."""
RED_DEPLOY_X = (0.6, 0.9)
"""Red deploys in this band of the map width (east)."""
DEPLOY_Y = (0.1, 0.9)
"""Both deploy in this band of the map height."""
DEPLOY_HEADING_SPREAD = math.pi / 4
"""Each side starts facing the enemy's edge, give or take this angle."""
TERRAIN_ROWS = 20
"""Rows of a generated map's grid (50 m cells on the default map)."""
TERRAIN_COLS = 20
"""Columns of a generated map's grid."""
NUM_HILLS = 5
"""Hills on a generated map."""
NUM_FORESTS = 3
"""Woods on a generated map."""
HILL_SIGMA = (0.0345, 0.115)
"""Range of a hill's spread, as a fraction of the map side."""
HILL_HEIGHT = (0.5, 1.0)
"""Range of a hill's height before the map is rescaled so its highest point is 1."""
FOREST_SIGMA = (0.05, 0.2)
"""Range of a wood's spread, as a fraction of the map side."""
FOREST_DENSITY = (0.25, 0.5)
"""Range of a wood's cover density at its centre (overlapping woods add up, to 1)."""
FEATURE_CENTRE = (0.1, 0.9)
"""Hills and woods are centred away from the map edges."""

VISIBILITY_RADIUS = 600.0
"""How far a battalion sees in an N-vs-M battle, in metres (line of sight permitting)."""

# --- scripted opponents -----------------------------------------------------
NUM_CURRICULUM_LEVELS = 5
"""Scripted opponents come in levels 1 (passive) to 5 (full combat);
:func:`envs.sim.validation.check_scripted_level` checks a level against this range."""
SCRIPTED_LEVELS = range(1, NUM_CURRICULUM_LEVELS + 1)
"""The scripted levels, 1 to :data:`NUM_CURRICULUM_LEVELS`."""
SCRIPTED_HALT_FRACTION = 0.8
"""Scripted advancing levels halt once the enemy is within this fraction of fire range."""
SCRIPTED_FIRE_INTENSITY = (0.0, 0.0, 0.0, 0.5, 1.0)
"""Fire intensity of scripted levels 1..5."""
