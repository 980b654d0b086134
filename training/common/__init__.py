"""What the SB3 PPO trainer and the MAPPO trainer share: settings, the evaluator, pools, logging."""
