"""Make ``model_repository`` (build code, publish CLI) importable from the checkout root."""

import os
import sys

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if CHECKOUT not in sys.path:
    sys.path.insert(0, CHECKOUT)
