"""`gpudoctor hook`: a fast, time-bounded pre-job health check for Slurm and Kubernetes.

Layers, as in the rest of gpudoctor: ``live`` records only what the requirements need
(one ``nvidia-smi -q -x``, framework build facts read from installed files by
``fastfacts``), ``node`` turns a snapshot into a ``NodeView``, ``requirements`` judges it
(pure functions), ``outcome`` makes the one-line verdict and exit code, ``prometheus``
writes node_exporter's textfile format. Nothing here imports a framework.
"""
