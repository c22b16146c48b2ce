# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""The one exception every model-config check raises (kept apart to avoid import cycles)."""

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type


class ModelConfigError(Exception):
    """A model configuration is invalid; the message starts with the offending field's path."""
