"""Multi-agent PPO (MAPPO) on N-vs-M battles: config, battles, rollout, update, trainer,
hooks, checkpoints, warm start. The public driver is :func:`training.train_mappo.train_mappo`."""
