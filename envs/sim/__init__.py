"""The battle core: pure NumPy, batched over battles, no gym, torch or file I/O."""
