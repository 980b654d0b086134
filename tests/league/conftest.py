"""A real tiny league, built once per test process and shared by the modules that read
it (test_league_report.py, test_league_roles.py): three roles taking turns rollout by
rollout on one folder, as concurrent processes would. Building it takes some 40 s, more
than half of them drawing the pictures (each role's and the league report) as each role
finishes."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.league.config import ROLE_MODULES

ROLES = tuple(ROLE_MODULES)
# Short battles (max_steps): the evaluation matches are most of the league's time.
TINY = dict(n_envs=8, rollout_steps=256, total_timesteps=1536, max_steps=50,
            warm_start_doctrine=None, snapshot_freq=512, eval_freq=512, n_eval_episodes=2,
            checkpoint_freq=1536, enable_wandb=False, progress_bar=False)


def role_config(role: str, folder: Path):
    """``role``'s tiny config, every league file under ``folder``."""
    from training.league.config import (
        LeagueExploiterConfig,
        MainAgentConfig,
        MainExploiterConfig,
        league_dir_settings,
    )

    config_class = {"main_agent": MainAgentConfig, "main_exploiter": MainExploiterConfig,
                    "league_exploiter": LeagueExploiterConfig}[role]
    extra = {}
    if role != "main_agent":  # an exploiter that resets after every evaluation it does not win
        extra.update(reset_win_rate_threshold=0.99, reset_window_size=1)
    if role == "league_exploiter":
        extra.update(exploitability_eval_freq=512, n_exploitability_opponents=2)
    return config_class(**TINY, **league_dir_settings(role, folder), **extra)


@pytest.fixture(scope="session")
def league(tmp_path_factory):
    """The three roles on one league folder, one rollout each in turn; the main agent
    logs to an offline W&B run. Returns (league folder, roles by name)."""
    from training.common.tracking import start_wandb
    from training.league.launch import role_class
    from training.league.role import train_in_turns

    root = tmp_path_factory.mktemp("league_report")
    folder = root / "league"
    with pytest.MonkeyPatch.context() as env:
        # W&B never touches the network, and writes only under root.
        for name, value in (("WANDB_MODE", "offline"), ("WANDB_SILENT", "true"),
                            ("WANDB_DIR", root / "wandb_home"),
                            ("WANDB_CONFIG_DIR", root / "wandb_config"),
                            ("WANDB_CACHE_DIR", root / "wandb_cache")):
            env.setenv(name, str(value))
        run, _ = start_wandb(project="league-report-test", entity=None, tags=[], config={},
                             log_dir=str(root / "wandb_run"))
        assert run is not None
        roles = {role: role_class(role).from_config(role_config(role, folder),
                                                    run=run if role == "main_agent" else None)
                 for role in ROLES}
        train_in_turns(list(roles.values()))
        run.finish()
    return folder, roles
