"""Probes: record raw facts about the live machine into a :class:`Snapshot`.

Nothing here judges. Every command, the NVML reader and every framework probe runs
in a child process under a timeout, all in parallel, so one hung ``nvidia-smi``
costs at most its timeout and never blocks the others. The entry point is
:func:`gpudoctor.probes.collect.collect`.
"""
