"""Files written atomically, under locks, and read safely (the bottom layer: no project imports)."""
