"""The one place where gpudoctor's exit codes are defined.

Every command maps its outcome to one of these; the README documents them.
"""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0           # no failures (warnings allowed unless --strict)
    PROBLEM = 1      # at least one failure, or a warning under --strict; explain: nothing matched
    USAGE = 2        # bad usage or unreadable input
    INTERNAL = 3     # gpudoctor itself failed (a bug, a broken install)


# Exit codes of `gpudoctor hook`, chosen to fit Slurm and node-problem-detector:
# 0 healthy, 1 a problem with the node, 2 unknown (gpudoctor could not tell).
class HookExit(IntEnum):
    OK = 0
    PROBLEM = 1
    UNKNOWN = 2
