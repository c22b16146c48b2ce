# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception every model-config check raises (kept apart to avoid import cycles)."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type


class ModelConfigError(Exception):
    """A model configuration is invalid; the message starts with the offending field's path."""
