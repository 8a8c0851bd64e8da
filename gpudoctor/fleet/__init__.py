"""Summarise many nodes' `gpudoctor check --json` reports: problems, version spread, outliers.

Input is what a cluster produces: one file per node (``srun -o reports/%N.json``), one
stream of JSON lines (``check --jsonl``), or pretty-printed documents one after another;
stretches that are not a readable report (``srun: error: ...``, a cut report) are counted
and named. Only each report's ``machine`` and ``findings`` are read. Reading is streamed
(``split``, ``read``, ``fast``) and spread over the cores for large inputs (``jobs``); ``node``
turns reports into Nodes and ``summary`` Nodes into the summary; this package module imports
none of its submodules.
"""
