"""Episode keys of a batch of battles: reproducible chains of battles per seed."""

from __future__ import annotations

import numpy as np

from envs.sim import random as rnd
from envs.sim.validation import check_int


class EpisodeChains:
    """Which battle each slot of a batch plays next.

    A slot given a seed starts that seed's chain of episodes; later episodes of the
    slot continue the chain. Episode ``n`` of seed ``s`` is always the same battle,
    whichever batch or slot plays it, so a batch of N battles reproduces N
    single-battle environments exactly.
    """

    def __init__(self, n_battles: int) -> None:
        self._base_keys = np.zeros(n_battles, np.uint64)
        self._episodes = np.zeros(n_battles, np.uint64)
        self._has_chain = np.zeros(n_battles, bool)

    def restart(self, battles: np.ndarray, seeds: list[int | None],
                fresh_seeds: np.ndarray) -> np.ndarray:
        """Keys of the next episode of ``battles``.

        A battle given a seed starts that seed's chain; one given None plays the
        next episode of its chain, or, if it has none yet, starts the chain of its
        entry in ``fresh_seeds`` (drawn from the caller's generator, so runs are
        reproducible end to end).
        """
        battles = np.asarray(battles, dtype=np.intp)
        for i, seed, fresh in zip(battles.tolist(), seeds, fresh_seeds.tolist(), strict=True):
            if seed is not None or not self._has_chain[i]:
                chain = check_int("seed", seed, minimum=0) if seed is not None else fresh
                self._base_keys[i] = rnd.seed_keys(np.array([chain]))[0]
                self._episodes[i] = 0
                self._has_chain[i] = True
            else:
                self._episodes[i] += np.uint64(1)
        return self.keys(battles)

    def advance(self, battles: np.ndarray) -> np.ndarray:
        """Keys of the next episode of each battle's chain (the vectorised auto-reset)."""
        self._episodes[battles] += np.uint64(1)
        return self.keys(battles)

    def select(self, battles: np.ndarray | slice) -> EpisodeChains:
        """A copy of the chains of ``battles``, as a smaller batch."""
        part = EpisodeChains(0)
        part._base_keys = self._base_keys[battles].copy()
        part._episodes = self._episodes[battles].copy()
        part._has_chain = self._has_chain[battles].copy()
        return part

    @classmethod
    def join(cls, parts: list[EpisodeChains]) -> EpisodeChains:
        """The chains of ``parts``, one after the other."""
        joined = cls(0)
        joined._base_keys = np.concatenate([part._base_keys for part in parts])
        joined._episodes = np.concatenate([part._episodes for part in parts])
        joined._has_chain = np.concatenate([part._has_chain for part in parts])
        return joined

    def keys(self, battles: np.ndarray) -> np.ndarray:
        """Keys of the current episode of ``battles``."""
        return rnd.episode_keys(self._base_keys[battles], self._episodes[battles])
