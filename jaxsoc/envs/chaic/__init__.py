"""CHAIC (Constrained Human-AI Cooperation, Du et al. 2024) as a jittable 2D world."""
