"""Torch networks for the commanders."""
