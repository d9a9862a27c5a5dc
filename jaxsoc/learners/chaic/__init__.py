"""Learned CHAIC helpers: the behaviour-modelling helper (``bm``) and trained policies as helpers (``ppo_helper``)."""
