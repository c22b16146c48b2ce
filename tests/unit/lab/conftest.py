"""lab/labctl.py imports its parts from lab/labctl_lib, as `python lab/labctl.py` finds them beside it."""

import os
import sys

LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "lab")
if LAB not in sys.path:
    sys.path.insert(0, LAB)
