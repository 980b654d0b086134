"""The battle core, batched over battles: the step as compiled Numba kernels
(:mod:`envs.sim.kernels`), maps, deployment, scripted commanders and randomness in NumPy;
no gym, torch or file I/O."""
