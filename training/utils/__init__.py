"""Small helpers shared by the training code: freezing trained policies for reuse as
fixed sub-policies or opponents (:mod:`training.utils.freeze_policy`)."""
