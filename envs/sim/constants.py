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

# --- arms, formations and melee --------------------------------------------
ARM_NAMES = ("infantry", "cavalry", "artillery")
"""The arms, in code order (a unit's ``arm`` is the index): every unit of the 1v1 duel
and of the default N-vs-M battles is infantry."""
INFANTRY = ARM_NAMES.index("infantry")
CAVALRY = ARM_NAMES.index("cavalry")
ARTILLERY = ARM_NAMES.index("artillery")
FORMATION_NAMES = ("line", "column", "square", "limbered")
"""The formations, in code order. Artillery in ``line`` is unlimbered (in battery)."""
LINE = FORMATION_NAMES.index("line")
COLUMN = FORMATION_NAMES.index("column")
SQUARE = FORMATION_NAMES.index("square")
LIMBERED = FORMATION_NAMES.index("limbered")
KEEP_FORMATION = -1
"""A formation order that keeps the current formation (what an order-less step gives)."""
ARM_FORMATIONS = ((LINE, COLUMN, SQUARE), (LINE, COLUMN), (LINE, LIMBERED))
"""The formations each arm can take; an order for any other is ignored."""
ARM_SPEED = ((1.0, 1.4, 0.15, 0.0), (1.6, 1.8, 0.0, 0.0), (0.05, 0.0, 0.0, 1.2))
"""Speed multiplier per arm (rows) and formation (columns), of ``MAX_SPEED``: a column
marches 40 % faster than a line and a square barely shuffles; cavalry is 60 % faster
than foot; unlimbered guns are manhandled a few metres, limbered ones keep up with the
infantry on the road. 0 where the arm cannot take the formation."""
ARM_FIREPOWER = ((1.0, 0.3, 0.5, 0.0), (0.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0))
"""Share of the arm's volley a formation delivers: a column fires with its leading
companies only, a square with one face; cavalry does not fire (its ``fire`` order is
its charge); limbered guns cannot fire."""
ARM_EXPOSURE = ((1.0, 1.5, 2.0, 0.0), (1.2, 1.5, 0.0, 0.0), (0.6, 0.0, 0.0, 1.0))
"""Multiplier on the damage artillery fire does to a formation: deep columns and
squares are dense targets a roundshot ploughs through; a battery is a small target."""
ARM_CAVALRY_DEFENCE = ((1.0, 0.6, 0.1, 0.0), (0.8, 0.8, 0.0, 0.0), (1.5, 0.0, 0.0, 2.0))
"""Multiplier on the melee damage a cavalry charge does to a formation: a square of
steady infantry is nearly proof against horse, a column less exposed than a line, guns
(worse still limbered) are cut down."""
ARM_MELEE = (1.0, 2.0, 0.2)
"""Melee power per arm, relative to ``MELEE_DAMAGE``: cavalry hits twice as hard as foot
(before its charge), gunners defend themselves feebly."""
ARM_RADIUS = (20.0, 20.0, 15.0)
"""Half the frontage of a unit in metres: two units can come no closer than the sum of
their radii (friends are pushed apart, enemies meet in melee at that distance). Two
battalions touch at 40 m, inside the 60 m of the disciplined close volley, so the duel's
fire fight is fought before any melee."""
ARM_DRILL_STEPS = (30, 15, 40)
"""Steps a change of formation takes (limbering or unlimbering for guns); meanwhile the
unit neither moves nor fires, and a charge catches it disordered."""
ARM_MORALE = (1.0, 1.0, 1.2)
"""Multiplier on the morale an arm loses per damage: gun crews are quickest to abandon
their pieces."""
ARTILLERY_FIRE_RANGE = 600.0
"""Range of a battery in metres (roundshot at effective range; canister within 200 m)."""
ARTILLERY_VOLLEY_DAMAGE = 0.35
"""Strength a full salvo of a fresh battery removes at point blank from a line in the
open (less than a battalion's volley, but from three times as far)."""
ARTILLERY_RELOAD_RATE = 0.025
"""Readiness a battery regains per step: its salvos come half as often as volleys."""
ARTILLERY_FIRE_ARC = math.pi / 6
"""Half-angle of a battery's arc of fire (30 degrees either side)."""
ARTILLERY_HIT_EXPONENT = 1.0
"""Hit chance of a salvo is ``(1 - distance / ARTILLERY_FIRE_RANGE) ** ARTILLERY_HIT_EXPONENT``:
falling linearly, so guns still hit at ranges where muskets are wasted."""
MELEE_DAMAGE = 0.02
"""Strength a full-strength infantry unit in contact removes from an enemy per step."""
CHARGE_IMPACT = 2.5
"""Melee multiplier of cavalry charging at full intensity (its ``fire`` order)."""
CHARGE_SPEED = 1.5
"""Speed multiplier of cavalry charging at full intensity."""
DISORDER_MELEE = 1.5
"""Melee multiplier against a unit caught changing formation."""
MELEE_REACH = 2.0
"""Metres beyond touching (the sum of two radii) at which enemies still fight hand to
hand: units pushed apart stand exactly touching, give or take rounding."""
MELEE_MORALE_EXTRA = 2.0
"""Extra morale lost per unit of melee damage: cold steel breaks men faster than fire."""

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
"""Fire intensity of scripted levels 1..5: their infantry's fire (:mod:`envs.sim.scripted`)."""
SCRIPTED_ARMS_INTENSITY = (0.0, 0.5, 0.875, 0.875, 1.0)
"""Intensity of scripted levels 1..5's other arms: their cavalry's charge (from level 2)
and their guns' fire in battery (from level 4). Levels 2 and 3 never fire a musket (the
infantry's ladder above) but charge with their horse, so that each level beats the one
below in a battle of all arms (:mod:`envs.sim.scripted`; the values were chosen on
validation battles of ``python -m benchmarks.scripted_ladder``)."""
SCRIPTED_DEPLOY_WITHIN = 300.0
"""Scripted infantry of levels 3 to 5 in column deploys into line once the nearest enemy
is this close (metres)."""
SCRIPTED_SQUARE_WITHIN = 350.0
"""Scripted level-5 infantry forms square when enemy cavalry in the fight comes this close
(beyond :data:`SCRIPTED_DEPLOY_WITHIN`, so that a column never starts deploying into line
with horse about: a change of formation cannot be countermanded, and a charge meets a
battalion caught in its drill)..."""
SCRIPTED_UNSQUARE_BEYOND = 400.0
"""...and deploys back into line once no enemy cavalry is this close."""
SCRIPTED_CHARGE_WITHIN = 250.0
"""Scripted cavalry charges its target from this distance."""
SCRIPTED_CAVALRY_SHY = 200.0
"""Scripted level-5 cavalry with no target but squares backs away from them to this
distance."""
SCRIPTED_UNLIMBER_FRACTION = 0.5
"""Scripted guns halt and unlimber once the nearest enemy is within this fraction of the
artillery's range; level 5 limbers up again to follow when no enemy is within range."""
