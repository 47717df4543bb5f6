"""The TLX knowledge layout: topics widest first, TLX's matching rule, the 16 KiB cap."""

from __future__ import annotations

from gitkb.importers import tlx_knowledge as tlx


def card(record_id: str, vendor: str, arch: str, family: str | None, what: str) -> dict:
    return {
        "id": record_id,
        "type": "technique-card",
        "status": "active",
        "retrieval": {"scope": {"vendor": vendor, "arch": arch, "operator_family": family}},
        "payload": {"technique": record_id, "what": what, "when": "always"},
    }


RECORDS = [
    card("n.softmax", "nvidia", "hopper", "softmax", "online rescale"),
    card("n.hopper", "nvidia", "hopper", None, "TMA loads"),
    card("n.any", "nvidia", "generic", None, "coalesce"),
    card("a.mi300", "amd", "cdna3", None, "LDS padding"),
    dict(card("n.gone", "nvidia", "hopper", None, "retracted"), status="retracted"),
]


def test_topics_are_widest_first_and_match_by_tlx_names():
    found = tlx.topics(RECORDS)
    assert [t.folder for t in found] == [
        "nvidia/generic", "amd/cdna3", "nvidia/hopper", "nvidia/hopper__softmax"
    ]  # fmt: skip
    hopper = found[2].manifest()
    assert hopper["priority"] == 10 and hopper["backends"] == ["cuda", "nvidia"]
    assert {"hopper", "h100", "sm_90"} <= set(hopper["architectures"])
    assert tlx.matches(hopper, "CUDA", "SM-90") and not tlx.matches(hopper, "cuda", "sm_100")
    text, files = tlx.context(found, "cuda", "h100")
    assert files == [
        "nvidia/generic/knowledge.md", "nvidia/hopper/knowledge.md",
        "nvidia/hopper__softmax/knowledge.md",
    ]  # fmt: skip
    assert text.startswith("--- knowledge.md (nvidia/generic) ---\n# nvidia")
    assert text.index("coalesce") < text.index("TMA loads") < text.index("online rescale")
    assert "retracted" not in text and "LDS padding" not in text
    _, files = tlx.context(found, "cuda", "h100", family="gemm")
    assert files == ["nvidia/generic/knowledge.md", "nvidia/hopper/knowledge.md"]


def test_the_context_is_capped_at_16_kib_cutting_the_narrowest():
    wide = [card(f"n.any{i}", "nvidia", "generic", None, "x" * 400) for i in range(60)]
    text, files = tlx.context(tlx.topics(wide + RECORDS[:1]), "nvidia", "hopper")
    assert len(text.encode()) == tlx.CONTEXT_CAP_BYTES
    assert files[-1] == "nvidia/hopper__softmax/knowledge.md" and "online rescale" not in text
