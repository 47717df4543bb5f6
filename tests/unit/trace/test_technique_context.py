"""Vocabulary 4's rules: a technique named as context (already in place, kept, what the
change builds on or replaced, a reason) is not the change; a sweep's winner is read
against where it started; a diff's replaced construct and an added autotune's configs are
not changes of their own; reverts; and the words vocabulary 3 lacked."""

from __future__ import annotations

import pytest

from gitkb.trace import techniques


def detect(diff: str, sentence: str, dsl: str = "triton") -> techniques.Detection:
    return techniques.vocabulary().detect(diff, sentence, dsl)


@pytest.mark.parametrize(
    ("dsl", "sentence", "key"),
    [
        # what precedes a word that says it stays
        ("triton", "block pointers unchanged; raise num_stages 3 -> 4", "num-stages-up"),
        ("hip", "the DPP reduction stays, waves_per_eu 1 -> 2", "waves-per-eu-up"),
        ("ck", "with the Intrawave scheduler in place, NPerBlock 128 -> 64", "ck-block-tile-down"),
        # what follows a word that says the change builds on it
        ("triton", "raise num_stages to 4 on top of the TMA loads", "num-stages-up"),
        ("cuda", "now that wmma is in, pad the smem tile to 33 columns", "smem-padding"),
        ("triton", "keeping the L2 swizzle, num_warps 4 -> 8", "num-warps-up"),
        ("triton", "same persistent kernel, BLOCK_N 64 -> 128", "block-size-up"),
        ("triton", "kept num_warps=8 but doubled BLOCK_N", "block-size-up"),
        # a clause that says "already", or reports what happened before
        ("cuda", "vector loads were already there; add __launch_bounds__(256)", "launch-bounds"),
        ("cute", "TileShape 128x128x64; the TMA path wasn't paying off", "cute-tile-shape"),
        ("cuda", "pad the tile to 33; ldmatrix was stalling on bank conflicts", "smem-padding"),
        # what the change replaced
        ("cuda", "read w through __ldg instead of staging it in shared memory", "read-only-cache"),
        ("cuda", "replaced the wmma fragments with mma.sync", "mma-sync"),
        # a possessor is what is there, not the change
        ("cute", "assert the TileShape's M divides the problem", ""),
    ],
)
def test_a_technique_named_as_context_is_not_the_change(dsl, sentence, key):
    assert detect("", sentence, dsl).key == key


def test_where_data_lives_is_a_change_not_context():
    # "kept in registers" says where the row lives: that is the change
    assert detect("", "the row is kept in registers between the two passes").key == (
        "register-resident-rows"
    )
    assert detect("", "keep x in registers between passes").key == "register-resident-rows"


def test_a_sentence_that_changes_no_code_names_no_change():
    assert detect("", "re-ran num_warps=8 with 500 reps, same 3% gain").key == ""
    assert detect("", "profiled the cp.async kernel under ncu", "cuda").key == ""
    assert detect("", "comment cleanup around the TMA loads; no code change").key == ""


def test_a_technique_named_in_another_s_words_is_its_part():
    # the producer's role is what it does, not a change of its own
    ws = "one TMA producer task and two MMA consumer tasks"
    assert detect("", ws, "tlx").key == "warp-specialization"
    role = "a producer warp issuing the TMA loads"
    assert detect("", role, "tlx").key == "warp-specialization"
    # side by side, two techniques stay two
    both = "use a cp.async copy atom for the smem fill"
    assert detect("", both, "cute").key == "async-copy+cute-tiled-copy"


@pytest.mark.parametrize(
    ("sentence", "key"),
    [
        # the winner against where the sweep started
        ("swept num_stages 2..5 from 4; 3 won", "num-stages-down"),
        ("BLOCK_N sweep 64/128/256 starting at 128, settled on 64", "block-size-down"),
        ("num_warps was 8; tried 2, 4 and 16, 16 was fastest", "num-warps-up"),
        # else against the default (num_warps: 4)
        ("tried num_warps in {2, 4, 8}; kept 2", "num-warps-down"),
        # neither: no direction, a mention
        ("tried BLOCK_N in {64, 128, 256}; 128 won", "block-size"),
    ],
)
def test_a_sweep_goes_from_where_it_started_to_its_winner(sentence, key):
    assert detect("", sentence).key == key


def test_a_direction_is_read_within_its_clause():
    sentence = "4 rows per program; the grid shrinks from 8192 to 2048 programs"
    assert detect("", sentence).key == "rows-per-program-up"


def test_an_effect_after_the_change_is_cut():
    effect = "DPP row_shr for the wave reduction, which frees the LDS tile"
    assert detect("", effect, "hip").key == "dpp-reduction"
    moved = "mainloop moved from cp.async to TMA; frees the producer warps' registers"
    assert detect("", moved, "cute").key == "tma-descriptors"


def test_what_a_diff_replaced_is_not_a_change_of_its_own():
    shuffle = (
        "-    __shared__ float red[32];\n-    red[lane] = v;\n"
        "+    v += __shfl_down_sync(0xffffffffu, v, 16);\n"
    )
    assert detect(shuffle, "", "cuda").key == "warp-shuffle"
    # taken out with nothing in its place, it is the change
    assert detect("-    const float4 v = x4[i];\n+    float v = x[i];\n", "", "cuda").key == (
        "vector-loads-removed"
    )


def test_an_added_autotune_s_configs_are_autotune():
    tuned = (
        "+@triton.autotune(configs=[triton.Config({'BLOCK_N': 512}, num_warps=8)], key=['N'])\n"
        " @triton.jit\n"
    )
    assert detect(tuned, "").key == "autotune"
    # alone, a launch that now sets num_warps=8 is read against the default
    assert detect("+    kernel[grid](x, num_warps=8)\n", "").key == "num-warps-up"


def test_reverts():
    assert detect("", "revert the cp.async change", "cuda").key == "async-copy-removed"
    # reverted *to* something puts it back
    assert detect("", "TMA didn't help; reverted to cp.async", "cuda").key == "async-copy"
    # a named setting reverted went back to a value the sentence does not name
    assert detect("", "reverted the evict_first hint").key == "eviction-policy"


@pytest.mark.parametrize(
    ("dsl", "sentence", "key"),
    [
        ("tlx", "split the loop into tlx.async_tasks", "warp-specialization"),
        ("triton", "flash-decoding for batch-1 decode", "split-reduction"),
        ("triton", "partition the KV sequence across 16 CTAs", "split-reduction"),
        ("ck", "k_batch 1 -> 4 for the skinny GEMM", "split-reduction"),
        ("ck", "k_batch 4 -> 1 once M grew", "split-reduction-removed"),
        ("cute", "GMMA atoms for the H100 build", "wgmma"),
        ("hip", "put amdgpu_waves_per_eu on the kernel", "waves-per-eu"),
        ("triton", "nw 8->4", "num-warps-down"),
        ("triton", "4 rows into each program", "rows-per-program-up"),
        ("cuda", "multiply by inv_n rather than divide", "reciprocal-multiply"),
        ("cuda", "griddepcontrol.wait before the first load", "programmatic-dependent-launch"),
        ("cute", "make_tiled_copy for the B tile", "cute-tiled-copy"),
        ("cute", "cluster shape 2x1x1", "thread-block-clusters"),
        ("tlx", "K/V buffers 1 -> 3", "double-buffering"),
    ],
)
def test_words_vocabulary_3_lacked(dsl, sentence, key):
    assert detect("", sentence, dsl).key == key


def test_an_epilogue_fusion_is_not_a_load_loop_fusion():
    epilogue = detect("", "fuse the bias and GELU into the GEMM epilogue")
    load = detect("", "fuse the residual add into the load loop")
    assert (epilogue.key, load.key) == ("fuse-epilogue", "fuse-into-load-loop")
    assert detect("", "bias applied in the epilogue, no extra kernel", "cuda").key == (
        "fuse-epilogue"
    )
    # the residual added in the same pass as the load, shown by a diff no code names
    diff = "+    r = tl.load(R + offs, mask=mask)\n+    x = x + r\n"
    assert detect(diff, "add the residual in the same pass as x").key == "fuse-into-load-loop"


def test_code_signatures_vocabulary_3_lacked():
    kbatch = "-    const ck::index_t k_batch = 1;\n+    const ck::index_t k_batch = 8;\n"
    assert detect(kbatch, "", "ck").key == "split-reduction"
    cluster = "-using ClusterShape = Shape<_1, _1, _1>;\n+using ClusterShape = Shape<_1, _2, _1>;\n"
    assert detect(cluster, "", "cute").key == "thread-block-clusters"
    back = "-using ClusterShape = Shape<_2, _1, _1>;\n+using ClusterShape = Shape<_1, _1, _1>;\n"
    assert detect(back, "", "cute").key == "thread-block-clusters-removed"
    fused = "+using Fusion = cutlass::epilogue::fusion::LinCombEltAct<GELU, half_t, float>;\n"
    assert detect(fused, "", "cute").key == "fuse-epilogue"
