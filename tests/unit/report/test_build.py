"""The reviewer's site: plain HTML with an inline SVG ladder, checked in a real headless browser."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

import pytest
from helpers import kb

from gitkb.record import dumps
from gitkb.report import LadderPoint, build_site, ladder_svg
from gitkb.testing import synthetic
from gitkb.testing.traces import legacy_trace

LADDER = [
    LadderPoint("v0", 0, 80.0, "baseline"),
    LadderPoint("v1", 1, 95.0, "reverted"),
    LadderPoint("v2", 2, 61.5, "milestone"),
    LadderPoint("v3", 3, 62.0, "kept"),
    LadderPoint("v4", 4, None, "reverted"),
    LadderPoint("v5", 5, 90.0, "deadend"),
    LadderPoint("v6", 6, None, "deadend"),
    LadderPoint("v7", 7, 40.2, "milestone", reference=True),
]


def test_ladder_svg_marks_milestones_dead_ends_and_the_reference_kernel():
    svg = ladder_svg(LADDER)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count('fill="#1a7f37"') == 2  # two milestones
    assert svg.count('fill="#c8ccd1"') == 1  # one measured revert (v4 has no latency)
    assert svg.count('stroke="#cf222e"') == 2  # both dead-ends, v6 on the axis
    assert "v6: no latency (deadend)" in svg and "v5: 90 us (deadend)" in svg
    assert svg.count('stroke="#8250df"') == 1 and "v7: reference kernel" in svg
    assert "v7: 40.2 us (milestone)" in svg
    assert "<polyline" in svg  # the best-so-far steps
    assert "No version" in ladder_svg([LadderPoint("v0", 0, None, "reverted")])


def test_site_holds_records_history_and_trace_pages(store, tmp_path):
    store.admit(
        dumps(synthetic.strategy(1)), "insert", trace="softmax-trace", trace_commit="c" * 40
    )
    pages = build_site(store, tmp_path / "site", {"softmax-trace": LADDER})
    record_id = synthetic.strategy(1)["id"]
    assert [p.name for p in pages] == [
        "index.html",
        "trace-softmax-trace.html",
        f"record-{record_id}.html",
    ]
    index = pages[0].read_text()
    assert "Records by type" in index and "strategy" in index and "<script" not in index
    assert f'<a href="record-{record_id}.html">{record_id}</a>' in index
    assert '<a href="trace-softmax-trace.html">' in index
    trace = pages[1].read_text()
    assert "<svg" in trace and f'<a href="record-{record_id}.html">' in trace
    assert "Reference kernel: v7. Dead-ends: v5, v6." in trace
    assert "http://" not in trace.replace('xmlns="http://www.w3.org/2000/svg"', "")
    record = pages[2].read_text()
    assert "What an agent is served" in record and "&quot;payload&quot;" in record
    assert '<a href="trace-softmax-trace.html">softmax-trace</a>' in record


def _png_pixels(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and the raw (filtered) scanlines of a non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    return width, height, zlib.decompress(idat)


@pytest.mark.slow
def test_site_renders_in_headless_chromium(store, tmp_path):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    store.admit(
        dumps(synthetic.strategy(1)), "insert", trace="softmax-trace", trace_commit="c" * 40
    )
    pages = build_site(store, tmp_path / "site", {"softmax-trace": LADDER})
    shot = tmp_path / "trace.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=900,700",
         f"--screenshot={shot}", pages[1].as_uri()],
        check=True, capture_output=True, timeout=90,
    )  # fmt: skip
    width, height, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (900, 700)
    # A blank page decodes to a few byte values; text, axes and coloured points give many.
    assert len(set(pixels)) > 40


@pytest.mark.slow
def test_report_cli_plots_a_mined_trace(tmp_path, store):
    trace = legacy_trace(tmp_path / "kernel_opt_001_softmax")
    assert kb("mine", str(trace), "--store", str(store.location)).returncode == 0
    out = tmp_path / "site"
    done = kb("report", "--out", str(out), "--store", str(store.location))
    assert done.returncode == 0, done.stderr.decode()
    page = (out / "trace-kernel_opt_001_softmax.html").read_text()
    assert page.count('fill="#1a7f37"') >= 2  # milestones of the fixture's ladder
    assert "Reference kernel: v6. Dead-ends: v2, v5." in page
    assert page.count('stroke="#cf222e"') == 2 and 'stroke="#8250df"' in page
    assert "kernel_opt_001_softmax" in (out / "index.html").read_text()
    linked = {name.split('"')[0] for name in page.split('<a href="record-')[1:]}
    assert len(linked) == 8  # every admitted record of the trace has a page of its own
    for name in linked:
        assert (out / f"record-{name}").is_file()


def test_attestations_show_counts_and_retire_hints(store, tmp_path):
    from gitkb.warmstart.attest import attest

    record = synthetic.strategy(2)
    store.admit(dumps(record), "insert")
    for _ in range(2):
        attest(store, record["id"], "not_reproduced", by="ci")
    index = build_site(store, tmp_path / "site", {})[0].read_text()
    assert "not_reproduced 2" in index
    assert "not reproduced 2 times and never validated" in index
