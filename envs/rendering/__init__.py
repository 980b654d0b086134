"""Pictures and replays of battles."""

from envs.rendering.draw import draw_battle
from envs.rendering.replay import (
    Replay,
    ReplayRecorder,
    load_replay,
    record_echelon_episode,
    record_episode,
    render_gif,
    save_replay,
)
from envs.rendering.viewer import write_replay_html

__all__ = ["Replay", "ReplayRecorder", "draw_battle", "load_replay", "record_echelon_episode",
           "record_episode", "render_gif", "save_replay", "write_replay_html"]
