"""The single-agent stack: Stable-Baselines3 PPO on the 1v1 duel (config, battles, callbacks,
checkpoints, warm start). The public entry point is :func:`training.train.train`."""
