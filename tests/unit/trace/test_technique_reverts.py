"""Vocabulary 5's rules: a construct taken out (dropped, reverted, taken back out, gone
back from, "non-") is its ``-removed`` key, never the construct put in; a sweep that won
where it started changed nothing; a budget or a role of a technique already there is not
the technique; and the words and code vocabulary 4 lacked."""

from __future__ import annotations

import pytest

from gitkb.trace import techniques


def detect(diff: str, sentence: str, dsl: str = "triton") -> techniques.Detection:
    return techniques.vocabulary().detect(diff, sentence, dsl)


@pytest.mark.parametrize(
    ("dsl", "sentence", "key"),
    [
        # a verb of taking before it and "out" after it
        ("cuda", "took the __launch_bounds__ back out", "launch-bounds-removed"),
        ("cuda", "pulled the cp.async path out of the mainloop", "async-copy-removed"),
        # a verb before it that vocabulary 4 did not read
        ("cuda", "undo the smem padding", "smem-padding-removed"),
        ("triton", "no longer using block pointers for V", "block-pointers-removed"),
        # a verb after it, a word or two on
        ("triton", "the persistent loop reverted: small batches lost", "persistent-kernel-removed"),
        ("cuda", "DSMEM exchange removed, each CTA reduces alone", "thread-block-clusters-removed"),
        # "non-" names the construct's absence
        ("triton", "go back to the non-persistent version", "persistent-kernel-removed"),
        # "without" where the sentence says it is so now
        ("cuda", "the kernel runs without the thread block cluster now", (
            "thread-block-clusters-removed"
        )),
        # taken out where the sentence names it, though named again after
        ("cuda", "dropped the 4-CTA cluster; the DSMEM reduction serialized", (
            "thread-block-clusters-removed"
        )),
    ],
)  # fmt: skip
def test_a_construct_taken_out_is_its_removed_key(dsl, sentence, key):
    assert detect("", sentence, dsl).key == key


@pytest.mark.parametrize(
    ("dsl", "sentence", "key"),
    [
        # the old form names no technique: the construct named elsewhere was taken out
        ("triton", "went back to plain pointer offsets; make_block_ptr hid the mask fold", (
            "block-pointers-removed"
        )),
        ("triton", "SPLIT_K back to 1: the atomics cost more than they saved", (
            "split-reduction-removed"
        )),
        ("ck", "k_batch down to 1", "split-reduction-removed"),
        # the old form names one: what it went back from is no change of its own
        ("cuda", "reverted to cp.async: TMA setup cost more at K=256", "async-copy"),
        # a named setting reverted went back to a value the sentence does not name
        ("triton", "back to the default; evict_first thrashed L2 for the weight", (
            "eviction-policy"
        )),
    ],
)  # fmt: skip
def test_back_to_an_old_form_takes_out_what_the_sentence_names(dsl, sentence, key):
    assert detect("", sentence, dsl).key == key


@pytest.mark.parametrize(
    ("dsl", "sentence", "key"),
    [
        # data written back is no revert; nor is a negated one
        ("cuda", "the epilogue writes the tile back to global memory through a TMA store", (
            "tma-descriptors"
        )),
        ("cuda", "keep the tile in shared memory, so the second pass doesn't go back to HBM", (
            "shared-memory-staging"
        )),
        # a verb of taking out in an earlier clause takes out nothing in this one
        ("triton", "drop masks, add tl.multiple_of hints", (
            "alignment-hints+mask-elimination"
        )),
    ],
)  # fmt: skip
def test_a_construct_put_in_stays_put_in(dsl, sentence, key):
    assert detect("", sentence, dsl).key == key


@pytest.mark.parametrize(
    "sentence",
    [
        "swept BLOCK_N 64/128/256 from 128: 128 still best",
        "num_stages sweep 2..5 again: 3 remained the fastest",
    ],
)
def test_a_sweep_that_won_where_it_started_changed_nothing(sentence):
    assert detect("", sentence).key == ""


def test_a_sweep_that_moved_still_has_its_direction():
    assert detect("", "swept BLOCK_N 64/128/256 from 128: 256 won").key == "block-size-up"


def test_a_budget_of_a_technique_already_there_is_not_the_technique():
    assert detect("", "producer warps registers 40 -> 24", "tlx").key == ""
    assert detect("", "consumer warp group register budget raised to 232", "tlx").key == ""


def test_a_role_s_work_is_the_role_not_a_change_of_its_own():
    # what a role's warps do (the tcgen05 MMA they issue) is their part of the split
    split = "split into a load partition and an MMA partition that issues tcgen05"
    assert detect("", split, "gluon").key == "warp-specialization"


@pytest.mark.parametrize(
    ("dsl", "sentence", "key"),
    [
        ("triton", "apply RoPE to k while it's loaded", "fuse-into-load-loop"),
        ("triton", "SiLU on the up projection as it is read in", "fuse-into-load-loop"),
        ("triton", "nonkdim 32 -> 16 for the decode shapes", "matrix-instr-nonkdim-down"),
        ("tlx", "V now arrives via tlx.async_load, then async_load_wait_group", "async-copy"),
        ("hip", "using LDS as a staging area for the gathered rows", "shared-memory-staging"),
        ("cute", "bias + ReLU via an EVT on the accumulator", "fuse-epilogue"),
        ("cuda", "launch as a 2-CTA cluster so the halves share K", "thread-block-clusters"),
    ],
)
def test_words_vocabulary_4_lacked(dsl, sentence, key):
    assert detect("", sentence, dsl).key == key


@pytest.mark.parametrize(
    ("dsl", "before", "after", "key"),
    [
        (
            "hip",
            "    sB[t] = B[off + t];",
            "    __builtin_amdgcn_global_load_lds(&B[off + t], &sB[t], 16, 0, 0);",
            "async-copy",
        ),
        (
            "hip",
            "    hipLaunchKernelGGL(k, dim3(n / 4), dim3(128), 0, s, x, y);",
            "    hipLaunchKernelGGL(k, dim3(n / 4), dim3(64), 0, s, x, y);",
            "threads-per-block-down",
        ),
        (
            "cuda",
            "    softmax_kernel<<<grid, dim3(128)>>>(x, y, n);",
            "    softmax_kernel<<<grid, dim3(256)>>>(x, y, n);",
            "threads-per-block-up",
        ),
        (
            "cute",
            "using SmemCopyAtomB = Copy_Atom<DefaultCopy, half_t>;",
            "using SmemCopyAtomB = Copy_Atom<SM75_U16x8_LDSM_T, half_t>;",
            "mma-sync",
        ),
        (
            "cute",
            "using Epi = LinearCombination;",
            "using Epi = Sm90EVT<Sm90Compute<relu>, Sm90AccFetch>;",
            "fuse-epilogue",
        ),
    ],
)
def test_code_vocabulary_4_lacked(dsl, before, after, key):
    assert detect(f"-{before}\n+{after}\n", "", dsl).key == key
