"""Tests of the league core (training/league)."""
