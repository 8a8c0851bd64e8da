"""gpudoctor: a GPU environment doctor for deep-learning machines.

Collect, judge, render: probes record raw facts into a snapshot, checks judge the
snapshot, renderers format the findings.
"""

__version__ = "0.1.0"
