"""Support bundles: one redacted .tar.gz that replays into the same report elsewhere.

``collect`` runs the extra commands (pip/conda list, kernel messages), ``redact`` and
``anonymize`` (joined in ``sanitize``) clean every member, ``make`` assembles the bundle,
``html`` renders report.html, ``write`` writes atomically and ``read`` unpacks safely.
"""
