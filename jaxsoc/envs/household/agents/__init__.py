"""Alice's human-like agent for the household, after Watch-And-Help's hierarchical planner: ``belief`` keeps a
distribution over where every grabbable object is, updated from what she sees each step, and samples the
complete worlds her planner plans in. Everything is jittable and vmappable over many worlds.
"""
