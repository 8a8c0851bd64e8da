"""Parsers for every nvidia-smi output a user can paste or a probe can record.

`parse(text)` detects the format and returns an `SmiReport`; `extract(text)` finds a table
or `-L` listing embedded in prose. Standard library only: nvidia-smi output is the evidence
when the rest of the stack is broken, so reading it must not depend on anything else.
"""

from .csvfmt import parse_csv
from .detect import extract, parse
from .errors import SmiParseError
from .listing import parse_list
from .model import SmiGpu, SmiMigDevice, SmiProcess, SmiReport
from .query import parse_query
from .table import parse_table
from .xml import parse_xml

__all__ = [
    "parse", "extract", "parse_xml", "parse_table", "parse_query", "parse_list", "parse_csv",
    "SmiParseError", "SmiReport", "SmiGpu", "SmiMigDevice", "SmiProcess",
]
