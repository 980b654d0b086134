"""The batched battles and their compiled steps: the 1v1 duel and N-vs-M team batches,
their kernels, observations and episode keys.
"""
