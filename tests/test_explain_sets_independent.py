"""The sets that measure explain stay unread by the catalog: no signature's example or source comes from a thread of
the frozen set or of the held-out half (bench/explain_accuracy.py names both). Threads are compared by repository
name and issue number, so that an owner renamed on GitHub (THUDM -> zai-org) is the same thread."""

from __future__ import annotations

import re

from gpudoctor.explain import catalog
from tests.explain_support import bench_module

_GITHUB = re.compile(r"https?://github\.com/[^/]+/([^/]+)/(?:issues|pull|discussions)/(\d+)")


def thread(url: str) -> str:
    url = re.sub(r"/+$", "", url.strip().lower().split("#")[0])
    m = _GITHUB.match(url)
    return f"github:{m.group(1)}/{m.group(2)}" if m else url


def test_thread_keys_ignore_the_owner_and_the_fragment():
    assert thread("https://github.com/THUDM/ChatGLM-6B/issues/38#issuecomment-1") == \
        thread("https://github.com/zai-org/chatglm-6b/issues/38/")
    assert thread("https://github.com/a/x/issues/1") != thread("https://github.com/a/x/issues/2")


def test_no_signature_was_written_from_a_frozen_or_held_out_thread():
    acc = bench_module("explain_accuracy")
    measured = {thread(c["source"]) for name in ("frozen", acc.HELD_OUT[1]) for c in acc.cases_of(name)
                if c["source"]}
    assert len(measured) > 300
    used = {(s.id, u) for s in catalog.load().signatures
            for u in [e["source"] for e in s.examples] + list(s.sources)}
    assert [(sid, u) for sid, u in used if thread(u) in measured] == []
