"""Seeded, deterministic build of the ops model set (``python -m model_repository._build``)."""
