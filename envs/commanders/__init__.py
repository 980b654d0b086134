"""Scripted commanders: the disciplined and combined-arms doctrines and the orders a
battalion can follow.
"""
