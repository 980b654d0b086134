"""Echelon battles: brigade and division commanders over frozen lower echelons, their
batches, the Gymnasium/SB3 echelon env and the semi-Markov drill env.
"""
