"""Counter-based random numbers for whole batches of battles.

A battle's random draws are a pure function of its episode key and of *what* is
being drawn (stream, step, lane), never of a generator's position. So a battle
draws the same numbers whether it runs alone or as row 17 of a batch of 4096,
and no Python loop over battles is needed. The mixer is the splitmix64
finaliser (Steele, Lea and Flood, 2014) applied to unsigned 64-bit NumPy arrays,
whose arithmetic wraps modulo 2**64.
"""

from __future__ import annotations

import numpy as np

from envs.sim.jit import kernel

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_STEP_MULT = _U64(0xD1B54A32D192ED03)
_LANE_MULT = _U64(0xABC98388FB8FAC03)
_STREAM_MULT = _U64(0x8CB92BA72F3D8DD7)
_SEED_SALT = _U64(0x5EED5EED5EED5EED)
_S30, _S27, _S31, _S40 = _U64(30), _U64(27), _U64(31), _U64(40)
_TO_UNIT = np.float32(1.0 / (1 << 24))

# Named streams keep unrelated draws independent.
STREAM_SPAWN = 1
STREAM_TERRAIN = 2
STREAM_ROUT = 3
STREAM_POLICY = 4
STREAM_RANDOM_ACTIONS = 5
STREAM_ORDERS = 6
STREAM_FORMATION = 7
_TO_UNIT_F64 = 1.0 / (1 << 53)


def stream_offset(stream: int) -> np.uint64:
    """What a stream adds to every draw's counter mix (compiled callers of
    :func:`uniform_draw` compute it once)."""
    # Python ints do the wrapping multiply, so NumPy's scalar overflow warning stays quiet.
    return _U64((stream * int(_STREAM_MULT)) % (1 << 64))


def mix64(z: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a bijection on uint64 with full avalanche."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


_mix64_scalar = kernel(inline="always")(mix64)


@kernel(inline="always")
def uniform_draw(key, counter, lane, offset):
    """One draw of :func:`uniform`, compiled: lane ``lane`` at ``counter`` of the stream
    whose :func:`stream_offset` is ``offset``, for the battle with episode key ``key``."""
    z = key ^ (np.uint64(counter) * _STEP_MULT + np.uint64(lane) * _LANE_MULT + offset)
    return np.float32(_mix64_scalar(z) >> _S40) * _TO_UNIT


def seed_keys(seeds: np.ndarray) -> np.ndarray:
    """Keys of episode 0 for battles seeded with the non-negative integers ``seeds``."""
    seeds = np.asarray(seeds, dtype=np.uint64)
    return mix64(seeds ^ _SEED_SALT)


def episode_keys(base_keys: np.ndarray, episodes: np.ndarray) -> np.ndarray:
    """Key of episode ``episodes`` of battles whose episode-0 key is ``base_keys``."""
    episodes = np.asarray(episodes, dtype=np.uint64)
    return mix64(base_keys + episodes * _GOLDEN)


def uniform(keys: np.ndarray, stream: int, counters: np.ndarray | int, lanes: int) -> np.ndarray:
    """Uniform float32 draws in [0, 1) of shape ``(len(keys), lanes)``.

    Args:
        keys: (B,) uint64 episode keys.
        stream: which kind of draw (one of the ``STREAM_*`` constants).
        counters: (B,) or scalar counter, usually the battle's step.
        lanes: number of independent draws per battle (units, hills, ...).
    """
    counters = np.asarray(counters, dtype=np.uint64)
    if counters.ndim:
        counters = counters[:, None]
    lane_ids = np.arange(lanes, dtype=np.uint64)
    z = keys[:, None] ^ (counters * _STEP_MULT + lane_ids * _LANE_MULT + stream_offset(stream))
    return (mix64(z) >> _S40).astype(np.float32) * _TO_UNIT


def uniform_range(keys: np.ndarray, stream: int, counters: np.ndarray | int, lanes: int,
                  low: float, high: float) -> np.ndarray:
    """Like :func:`uniform`, scaled to ``[low, high)``."""
    return np.float32(low) + uniform(keys, stream, counters, lanes) * np.float32(high - low)


def normal(keys: np.ndarray, stream: int, counters: np.ndarray | int, lanes: int) -> np.ndarray:
    """Standard normal float32 draws of shape ``(len(keys), lanes)`` (Box-Muller).

    Each draw uses two 53-bit uniforms of its own lanes (``2 * lane`` and
    ``2 * lane + 1``) and float64 arithmetic, so it is a pure function of the key,
    the counter and the lane, like every draw here; NumPy's float64 ``log`` and ``cos``
    give the same result for an element wherever it sits in an array (a test checks
    it), so a battle's draws do not depend on its batch.
    """
    counters = np.asarray(counters, dtype=np.uint64)
    if counters.ndim:
        counters = counters[:, None]
    lane_ids = np.arange(2 * lanes, dtype=np.uint64)
    z = keys[:, None] ^ (counters * _STEP_MULT + lane_ids * _LANE_MULT + stream_offset(stream))
    u = (mix64(z) >> _U64(11)).astype(np.float64) * _TO_UNIT_F64
    radius = np.sqrt(-2.0 * np.log1p(-u[:, 0::2]))  # 1 - u is in (0, 1]: log is finite
    return (radius * np.cos(2.0 * np.pi * u[:, 1::2])).astype(np.float32)
