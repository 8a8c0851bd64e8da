"""``gpudoctor explain``: real error messages and logs -> diagnosis and fix recipe.

Pipeline: ``sources`` opens the inputs (text, files, .gz, stdin), ``scan`` streams them
through the signature ``catalog`` in bounded memory, ``context`` reads facts and context
clues (and pasted nvidia-smi output) near the matches, ``diagnose`` ranks one diagnosis
per family (``oom`` reads out-of-memory numbers, ``derive`` looks values up in the
knowledge base) and ``tailor`` fills the recipes the checks share. ``render`` prints.
The entry points (``explain``, ``explain_text``, ``Result``) are in ``pipeline``; this
package module imports none of its submodules.
"""
