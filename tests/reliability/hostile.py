"""Hostile files through every loader: each must be refused with one of our named errors.

A case puts one hostile file where a loader reads (a pool folder, a checkpoint
path, a registry) and calls the loader. What counts:

- ``refused``: it raised a ``ValueError`` (all our file errors are: they name the
  file) or ``FileNotFoundError``, not something from inside NumPy, torch,
  zipfile or pathlib, and the message does not suggest ``weights_only=False``;
- ``skipped``: a JSON-lines reader left the bad line out (as documented);
- anything else (it loaded, raised something else, hung past :data:`HANG_S`,
  or ran the payload: the payload writes a marker file) is a failure.

Run it in its own process (``python -m tests.reliability.hostile FOLDER
[--bomb-mib N]``): it prints one JSON line per case. ``test_hostile_files.py``
runs it with a small archive limit and bomb; ``benchmarks/reliability.py`` with
the real limit and a real bomb.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path

HANG_S = 20
MARKER = "PAYLOAD_RAN"
NESTING = 100_000


class Payload:
    """Unpickling this writes the marker file: proof that a loader ran code from a file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def nested_json() -> str:
    return "[" * NESTING + "]" * NESTING


# --- writers of hostile files -------------------------------------------------------------

def symlink_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def fifo(path: Path) -> None:
    os.mkfifo(path)


def zip_bomb(path: Path, mib: int) -> None:
    """An archive whose one member expands to ``mib`` MiB of zeros."""
    chunk = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("data", "w", force_zip64=True) as member:
            for _ in range(mib):
                member.write(chunk)


def torch_payload(path: Path, marker: Path) -> None:
    import torch

    torch.save({"kwargs": {}, "state_dict": {"w": Payload(str(marker))},
                "policy_state_dict": Payload(str(marker))}, path)


def rewritten_archive(path: Path, valid: Path, member: str,
                      rewrite: Callable[[bytes], bytes]) -> Path:
    """A copy at ``path`` of the zip archive ``valid`` (an SB3 model) with ``member``'s
    bytes replaced by ``rewrite`` of them; returns ``path``."""
    with zipfile.ZipFile(valid) as source, zipfile.ZipFile(path, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            target.writestr(item, rewrite(data) if item.filename == member else data)
    return path


def rewritten_sb3_data(path: Path, valid: Path, edit: Callable[[dict], None]) -> Path:
    """A copy at ``path`` of the SB3 archive ``valid`` whose JSON ``data`` member ``edit``
    has changed in place; returns ``path``."""

    def rewrite(raw: bytes) -> bytes:
        fields = json.loads(raw)
        edit(fields)
        return json.dumps(fields).encode()

    return rewritten_archive(path, valid, "data", rewrite)


def sb3_with_weights_payload(path: Path, valid: Path, marker: Path) -> None:
    """A real SB3 archive whose ``policy.pth`` unpickles a payload."""
    import torch

    buffer = io.BytesIO()
    torch.save({"mlp_extractor.policy_net.0.weight": Payload(str(marker))}, buffer)
    rewritten_archive(path, valid, "policy.pth", lambda _: buffer.getvalue())


def sb3_with_nested_data(path: Path, valid: Path) -> None:
    rewritten_archive(path, valid, "data", lambda _: nested_json().encode())


def huge_team_snapshot(path: Path) -> None:
    """A MAPPO policy file whose constructor arguments ask for a 160 GB layer."""
    import torch

    kwargs = dict(obs_dim=140, action_dim=3, state_dim=237, n_agents=2, share_parameters=True,
                  actor_hidden_sizes=[200_000, 200_000], critic_hidden_sizes=[128])
    torch.save({"kwargs": kwargs, "state_dict": {"x": torch.zeros(4)}, "version": 1}, path)


def huge_mappo_checkpoint(path: Path) -> None:
    import torch

    kwargs = dict(obs_dim=140, action_dim=3, state_dim=237, n_agents=2, share_parameters=True,
                  actor_hidden_sizes=[200_000, 200_000], critic_hidden_sizes=[128])
    torch.save({"kwargs": kwargs, "policy_state_dict": {"x": torch.zeros(4)},
                "optimizer_state_dict": {}, "total_steps": 0, "episodes": 0, "numpy_rng": {},
                "torch_rng": torch.zeros(1), "minibatch_rng": torch.zeros(1)}, path)


# --- the campaign -------------------------------------------------------------------------

class Campaign:
    """Builds the cases in ``folder`` (a fresh folder per case) and runs them."""

    def __init__(self, folder: Path, bomb_mib: int) -> None:
        self.folder = folder
        self.bomb_mib = bomb_mib
        self.marker = folder / MARKER
        self.valid_ppo = self._valid_ppo()
        self.outside = folder / "outside"
        self.outside.mkdir()
        import shutil

        self.outside_snapshot = shutil.copy(self.valid_ppo, self.outside / "elsewhere.zip")
        self.outside_team = self.outside / "elsewhere.pt"
        self._save_team(self.outside_team)
        self._counter = 0

    def _valid_ppo(self) -> Path:
        from stable_baselines3 import PPO

        from envs.vec_env import BattalionVecEnv
        from training.ppo.checkpoints import save_ppo

        model = PPO("MlpPolicy", BattalionVecEnv(2), n_steps=8, batch_size=16, device="cpu")
        return save_ppo(model, self.folder / "valid.zip")

    @staticmethod
    def _team():
        from models.mappo_policy import MAPPOPolicy

        return MAPPOPolicy(obs_dim=22, action_dim=3, state_dim=25, n_agents=2,
                           actor_hidden_sizes=(16,), critic_hidden_sizes=(16,))

    def _save_team(self, path: Path) -> None:
        from models.mappo_files import save_policy

        save_policy(self._team(), path, version=1)

    def fresh(self) -> Path:
        self._counter += 1
        folder = self.folder / f"case{self._counter:03d}"
        folder.mkdir()
        return folder

    # Each loader: (name, file name it reads, how to call it on a folder holding that file).
    def loaders(self) -> list[tuple[str, str, Callable[[Path], object], set[str]]]:
        from models.mappo_files import load_policy
        from training.artifacts import CheckpointManifest
        from training.curriculum_scheduler import load_v1_weights_into_mappo
        from training.elo import EloRegistry
        from training.evaluate import evaluate
        from training.league.agent_pool import AgentPool
        from training.league.match_database import MatchDatabase
        from training.ppo.checkpoints import load_ppo
        from training.self_play import OpponentPool, TeamOpponentPool
        from training.train_mappo import policy_from_checkpoint

        team = self._team()
        archive = {"dev_zero", "fifo", "bomb"}
        return [
            ("OpponentPool reload", "snapshot_v000001.zip",
             lambda f: OpponentPool(f).sample_latest(), archive | {"outside", "weights"}),
            ("TeamOpponentPool reload", "team_snapshot_v000001.pt",
             lambda f: TeamOpponentPool(f).sample_latest(),
             archive | {"outside", "weights", "huge"}),
            ("load_ppo", "model.zip", lambda f: load_ppo(f / "model.zip"),
             archive | {"weights", "nested"}),
            ("evaluate", "model.zip", lambda f: evaluate(str(f / "model.zip"), n_episodes=1),
             archive | {"weights", "nested"}),
            ("load_policy", "policy.pt", lambda f: load_policy(f / "policy.pt"),
             archive | {"weights", "huge"}),
            ("MAPPO policy_from_checkpoint", "mappo_policy.pt",
             lambda f: policy_from_checkpoint(f / "mappo_policy.pt"),
             archive | {"weights", "huge"}),
            ("load_v1_weights_into_mappo", "v1.zip",
             lambda f: load_v1_weights_into_mappo(f / "v1.zip", team),
             archive | {"weights", "nested"}),
            ("EloRegistry", "elo.json", lambda f: EloRegistry(f / "elo.json"),
             {"dev_zero", "fifo", "nested"}),
            ("AgentPool", "pool.json", lambda f: AgentPool(f / "pool.json").list(),
             {"dev_zero", "fifo", "nested"}),
            ("MatchDatabase", "matches.jsonl", lambda f: len(MatchDatabase(f / "matches.jsonl")),
             {"dev_zero", "fifo", "nested_line"}),
            ("CheckpointManifest", "manifest.jsonl",
             lambda f: CheckpointManifest(f / "manifest.jsonl").rows(),
             {"dev_zero", "fifo", "nested_line"}),
        ]

    def plant(self, kind: str, path: Path, loader: str) -> None:
        if kind == "dev_zero":
            symlink_to_dev_zero(path)
        elif kind == "fifo":
            fifo(path)
        elif kind == "bomb":
            zip_bomb(path, self.bomb_mib)
        elif kind == "outside":
            path.symlink_to(self.outside_team if path.suffix == ".pt" else self.outside_snapshot)
        elif kind == "weights":
            if path.suffix == ".zip":
                sb3_with_weights_payload(path, self.valid_ppo, self.marker)
            else:
                torch_payload(path, self.marker)
        elif kind == "huge":
            (huge_mappo_checkpoint if loader.startswith("MAPPO") else huge_team_snapshot)(path)
        elif kind == "nested":
            if path.suffix == ".zip":
                sb3_with_nested_data(path, self.valid_ppo)
            else:
                path.write_text(nested_json())
        elif kind == "nested_line":
            path.write_text(json.dumps({"a": 1}) + "\n" + nested_json() + "\n")
        else:
            raise ValueError(kind)

    def run(self) -> list[dict]:
        results = []
        for loader, file_name, call, kinds in self.loaders():
            for kind in sorted(kinds):
                folder = self.fresh()
                self.plant(kind, folder / file_name, loader)
                results.append(self.attempt(loader, kind, lambda c=call, f=folder: c(f)))
        return results

    def attempt(self, loader: str, kind: str, call: Callable[[], object]) -> dict:
        def on_alarm(signum, frame):
            raise TimeoutError("hung")

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(HANG_S)
        outcome, detail = "loaded", ""
        try:
            call()
            if kind == "nested_line":
                outcome = "skipped"
        except TimeoutError:
            outcome = "hung"
        except (ValueError, FileNotFoundError) as error:
            frame = traceback.extract_tb(error.__traceback__)[-1].filename
            ours = any(part in frame for part in ("/storage/", "/envs/", "/training/", "/models/"))
            advice = "weights_only=False" in str(error)
            outcome = "refused" if ours and not advice else "raw"
            detail = f"{type(error).__name__}: {str(error)[:160]}"
        except BaseException as error:  # noqa: BLE001 - anything else is a finding
            outcome, detail = "raw", f"{type(error).__name__}: {str(error)[:160]}"
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        payload = self.marker.exists()
        return {"loader": loader, "kind": kind, "outcome": outcome, "payload_ran": payload,
                "detail": detail}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--bomb-mib", type=int, default=3 * 1024)
    parser.add_argument("--archive-limit-mib", type=int, default=None,
                        help="lower storage.files.MAX_ARCHIVE_BYTES (tests use a small bomb)")
    args = parser.parse_args(argv)
    if args.archive_limit_mib is not None:
        import storage.files

        storage.files.MAX_ARCHIVE_BYTES = args.archive_limit_mib << 20
    args.folder.mkdir(parents=True, exist_ok=True)
    for result in Campaign(args.folder.resolve(), args.bomb_mib).run():
        print(json.dumps(result), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
