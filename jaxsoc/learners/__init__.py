"""Learners (PPO, A2C, behaviour cloning) arrive with the learners issue."""
