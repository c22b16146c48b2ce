"""The parts of lab/labctl.py, one per thing the lab manages."""
