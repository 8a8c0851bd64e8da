"""A --torch-module target whose import fails saying whether torch was imported before it (it should not
be: the child imports the user's module first, so a misspelt target costs no torch import)."""

import sys

raise ImportError(f"torch imported before this module: {'torch' in sys.modules}")
