#!/usr/bin/env bash
# bench/gpu_check.sh: prove the nvidia target end to end on a real GPU, in one go.
#
# On a machine with an NVIDIA GPU and Python >= 3.11: make a venv, install gitkb from
# this checkout plus torch and triton from the package index, optimize the Triton
# example bundle (targets/nvidia/examples/triton_softmax) with the knobs provider,
# committing the winner into a scratch git repository; mine the run's trace into a
# fresh store, validate the store, warm-start a second run from it, and print one
# table. Every step's output stays under the work folder.
#
#   bench/gpu_check.sh [--dry-run] [--workdir DIR] [--venv DIR [--no-install]]
#                      [--system-site-packages]
#
#   --dry-run               no GPU needed: checks the tools, the bundle (files, JSON, gitkb's
#                           bundle validation, the knobs, the harness importing without torch
#                           and refusing to build without a GPU), installs gitkb, checks the
#                           CLI flags used here, then rehearses every later step on a copy of
#                           a bundle that runs on the CPU: this Triton bundle under Triton's
#                           interpreter when the venv has torch and triton, else the CPU
#                           blocked_matmul example.
#   --workdir DIR           where everything goes (default: a new folder under /tmp)
#   --venv DIR              the venv to use, made when missing (default: WORKDIR/venv); an
#                           existing one with torch skips the big download
#   --no-install            use --venv as it is (it must hold gitkb, and for a real run torch
#                           and triton): nothing is installed into it
#   --system-site-packages  let the new venv see the system's packages (a preinstalled torch)
#
# Exit status: 0 all steps passed; 1 a step failed (named on stderr); 2 bad usage;
# 3 no GPU here (nvidia-smi missing, or torch sees no CUDA device).
# Environment: PYTHON (default python3) makes the venv; GPU_CHECK_TORCH (default "torch") and
# GPU_CHECK_TRITON (default "triton") are the pip requirements; PIP_INDEX_URL and
# PIP_EXTRA_INDEX_URL reach another index.

set -u -o pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE="$REPO/targets/nvidia/examples/triton_softmax"
CPU_EXAMPLE="$REPO/targets/cpu/examples/blocked_matmul"
HELPER="$REPO/bench/gpu_check.py"
PYTHON_BIN=${PYTHON:-python3}
TARGET_SECONDS=600

DRY_RUN=0
WORK=""
VENV=""
SYSTEM_SITE=""
INSTALL=1

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --workdir) WORK=${2:?--workdir needs a folder}; shift ;;
    --venv) VENV=${2:?--venv needs a folder}; shift ;;
    --no-install) INSTALL=0 ;;
    --system-site-packages) SYSTEM_SITE="--system-site-packages" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done

STEP="setup"
HELPER_REASON=""
STEP_NO=0
STARTED=$SECONDS
STEP_STARTED=$SECONDS

fail() {
  echo "gpu_check: FAILED at step '$STEP': $*" >&2
  [ -n "$WORK" ] && echo "gpu_check: everything so far is under $WORK" >&2
  exit 1
}

no_gpu() {
  echo "gpu_check: NO GPU: $* This check needs an NVIDIA GPU;" \
    "bench/gpu_check.sh --dry-run checks its steps without one." >&2
  exit 3
}

step() {
  [ "$STEP_NO" -gt 0 ] && echo "   ($((SECONDS - STEP_STARTED)) s)"
  STEP_NO=$((STEP_NO + 1))
  STEP=$1
  STEP_STARTED=$SECONDS
  echo "== [$STEP_NO] $STEP"
}

# Run a command with its output in a log; on failure show the log's tail and stop.
logged() {
  local log=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 25 "$log" | sed 's/^/   | /' >&2
    fail "'$*' failed (log: $log)"
  fi
}

# The helper, under the venv's Python: its stdout is the step's report, its last stderr
# line the reason it failed (warnings from the libraries it loads stay in helper.log).
helper() {
  local out status
  out=$("$PY" "$HELPER" "$@" 2>"$WORK/helper.err")
  status=$?
  cat "$WORK/helper.err" >>"$WORK/helper.log"
  [ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/   /'
  [ "$status" = 0 ] && return 0
  HELPER_REASON=$(grep -v '^[[:space:]]*$' "$WORK/helper.err" | tail -n 1)
  return "$status"
}

# A helper verdict that must hold: stop at this step otherwise.
must() { helper "$@" || fail "$HELPER_REASON"; }

kb() { PATH="$VENV/bin:$PATH" git kb "$@"; }

# --------------------------------------------------------------------------- steps

step "tools"
command -v "$PYTHON_BIN" >/dev/null || fail "$PYTHON_BIN not found (set PYTHON=...)"
"$PYTHON_BIN" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || fail "$("$PYTHON_BIN" --version 2>&1) is too old: gitkb needs Python >= 3.11"
"$PYTHON_BIN" -c 'import venv, ensurepip' 2>/dev/null \
  || fail "$PYTHON_BIN lacks venv/ensurepip (Debian: apt-get install python3-venv)"
command -v git >/dev/null || fail "git not found"
echo "   $("$PYTHON_BIN" --version 2>&1), $(git --version)"
if command -v nvidia-smi >/dev/null; then
  GPUS=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1) \
    || { [ "$DRY_RUN" = 1 ] || no_gpu "nvidia-smi fails: $GPUS."; }
  echo "   nvidia-smi: ${GPUS:-no GPU listed}"
  [ -n "$GPUS" ] || [ "$DRY_RUN" = 1 ] || no_gpu "nvidia-smi lists no GPU."
elif [ "$DRY_RUN" = 1 ]; then
  echo "   nvidia-smi: not found (fine for a dry run)"
else
  no_gpu "nvidia-smi is not on PATH."
fi

step "workdir"
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/gitkb-gpu-check.XXXXXX") || fail "cannot make a work folder"
elif [ -e "$WORK" ] && [ -n "$(ls -A "$WORK" 2>/dev/null)" ]; then
  fail "--workdir $WORK is not empty"
fi
mkdir -p "$WORK" || fail "cannot make $WORK"
WORK=$(cd "$WORK" && pwd)
VENV=${VENV:-$WORK/venv}
echo "   $WORK"

step "bundle files"
for name in kernel.py harness.py cases.json target.json budget.json; do
  [ -f "$BUNDLE/$name" ] || fail "$BUNDLE/$name is missing"
done
for name in cases.json target.json budget.json; do
  "$PYTHON_BIN" -m json.tool "$BUNDLE/$name" >/dev/null 2>"$WORK/json-check.log" \
    || fail "$BUNDLE/$name is not valid JSON: $(tail -n 1 "$WORK/json-check.log")"
done
for name in kernel.py harness.py; do
  "$PYTHON_BIN" -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' \
    "$BUNDLE/$name" 2>"$WORK/syntax-check.log" \
    || fail "$BUNDLE/$name is not valid Python: $(tail -n 1 "$WORK/syntax-check.log")"
done
echo "   $BUNDLE"

step "venv and install"
[ "$INSTALL" = 1 ] || [ -x "$VENV/bin/python" ] || fail "--no-install needs --venv DIR holding a venv"
if [ ! -x "$VENV/bin/python" ]; then
  # shellcheck disable=SC2086 # SYSTEM_SITE is one flag or nothing
  logged "$WORK/venv.log" "$PYTHON_BIN" -m venv $SYSTEM_SITE "$VENV"
fi
PY="$VENV/bin/python"
REQUIREMENTS=("$REPO")
if [ "$DRY_RUN" = 0 ]; then
  REQUIREMENTS+=("${GPU_CHECK_TORCH:-torch}" "${GPU_CHECK_TRITON:-triton}")
fi
if [ "$INSTALL" = 1 ]; then
  echo "   pip install ${REQUIREMENTS[*]} (into $VENV; log $WORK/pip.log)"
  [ "$DRY_RUN" = 1 ] || echo "   (torch with its CUDA libraries is a few GB the first time)"
  logged "$WORK/pip.log" "$PY" -m pip install "${REQUIREMENTS[@]}"
else
  echo "   $VENV as it is (--no-install)"
fi
[ -x "$VENV/bin/git-kb" ] || fail "the install left no git-kb in $VENV/bin"
HAS_TRITON=0
"$PY" -c 'import torch, triton' 2>/dev/null && HAS_TRITON=1
"$PY" -c 'import gitkb; print("   gitkb", gitkb.__version__)'
[ "$HAS_TRITON" = 0 ] || "$PY" -c 'import torch, triton; print("   torch", torch.__version__, "triton", triton.__version__)'
[ "$DRY_RUN" = 1 ] || [ "$HAS_TRITON" = 1 ] || fail "torch and triton do not import in $VENV"

step "command line"
for verb in optimize init mine validate; do
  kb "$verb" -h >"$WORK/help-$verb.txt" 2>&1 \
    || fail "'git kb $verb -h' failed: $(tail -n 1 "$WORK/help-$verb.txt")"
done
for flag in --provider --kernel --output --warm-start --kb; do
  grep -q -- "$flag" "$WORK/help-optimize.txt" || fail "'git kb optimize' has no $flag flag"
done
for flag in --store --json; do
  grep -q -- "$flag" "$WORK/help-mine.txt" || fail "'git kb mine' has no $flag flag"
done
grep -q -- "--json" "$WORK/help-validate.txt" || fail "'git kb validate' has no --json flag"
echo "   git kb optimize/init/mine/validate answer -h with the flags used here"

step "toolchain"
if [ "$DRY_RUN" = 1 ]; then must toolchain --dry-run; else must toolchain; fi

step "bundle as gitkb sees it"
must bundle "$BUNDLE"

if [ "$DRY_RUN" = 1 ]; then
  step "compile for sm_90 (no GPU needed)"
  if [ "$HAS_TRITON" = 1 ]; then
    must compile "$BUNDLE"
  else
    echo "   skipped: triton is not in the venv (--venv DIR with torch and triton compiles too)"
  fi
fi

step "device"
if [ "$DRY_RUN" = 1 ]; then
  must device "$BUNDLE" --out "$WORK/device.json" --dry-run
else
  helper device "$BUNDLE" --out "$WORK/device.json"
  status=$?
  [ "$status" = 3 ] && no_gpu "$HELPER_REASON"
  [ "$status" = 0 ] || fail "$HELPER_REASON"
fi

RUN_BUNDLE=$BUNDLE
TITLE="gitkb GPU check"
RUN_ENV=()
if [ "$DRY_RUN" = 1 ]; then
  step "rehearsal bundle"
  if [ "$HAS_TRITON" = 1 ]; then
    RUN_BUNDLE="$WORK/bundle-rehearsal/triton_softmax"
    RUN_ENV=(TRITON_INTERPRET=1)
    TITLE="REHEARSAL (dry run): the Triton bundle in Triton's CPU interpreter; not GPU numbers"
  else
    RUN_BUNDLE="$WORK/bundle-rehearsal/blocked_matmul"
    TITLE="REHEARSAL (dry run): the CPU blocked_matmul example stands in; not GPU numbers"
  fi
  mkdir -p "$WORK/bundle-rehearsal"
  must rehearsal-bundle "$([ "$HAS_TRITON" = 1 ] && echo "$BUNDLE" || echo "$CPU_EXAMPLE")" \
    "$RUN_BUNDLE"
  echo "   $TITLE"
  echo "   $RUN_BUNDLE (a copy with a small budget)"
fi

# A scratch git repository holding only a copy of the bundle's kernel.py.
kernel_repo() {
  local repo=$1
  logged "$WORK/git.log" git init -q "$repo"
  cp "$RUN_BUNDLE/kernel.py" "$repo/kernel.py" || fail "cannot copy kernel.py into $repo"
  # The winner commit is made with the user's git settings: no signing key is needed here.
  git -C "$repo" config commit.gpgsign false
  git -C "$repo" config user.name >/dev/null || git -C "$repo" config user.name "gitkb gpu check"
  git -C "$repo" config user.email >/dev/null \
    || git -C "$repo" config user.email "gpu-check@example.invalid"
  logged "$WORK/git.log" git -C "$repo" add kernel.py
  logged "$WORK/git.log" git -C "$repo" commit -q -m "Add the kernel under optimization"
}

# git kb optimize, progress lines shown as they come; exit 0 (a committed winner) required.
optimize() {
  local name=$1
  shift
  env ${RUN_ENV[@]+"${RUN_ENV[@]}"} PATH="$VENV/bin:$PATH" git kb optimize "$RUN_BUNDLE" \
    --provider knobs --kernel "$WORK/$name-repo/kernel.py" --output "$WORK/$name" "$@" \
    2>&1 >"$WORK/$name.json" | tee "$WORK/$name.log" | sed 's/^/   /'
  local status=${PIPESTATUS[0]}
  case $status in
    0) ;;
    2) helper expect optimize "$WORK/$name/result.json"; fail "no winner (exit 2): $HELPER_REASON" ;;
    3) fail "the winner commit failed (exit 3): see $WORK/$name/auto_commit.json" ;;
    *) fail "git kb optimize exited $status: $(grep -v '^\[gitkb\]' "$WORK/$name.log" | tail -n 1)" ;;
  esac
  must expect optimize "$WORK/$name/result.json" --repo "$WORK/$name-repo"
}

step "optimize (run 1, cold, knobs provider, commit into a scratch repo)"
kernel_repo "$WORK/run-1-repo"
optimize run-1

step "mine the trace into a fresh store"
logged "$WORK/init.log" kb init "$WORK/store"
kb mine "$WORK/run-1/trace" --store "$WORK/store" --json >"$WORK/mine.json" 2>"$WORK/mine.log" \
  || fail "git kb mine failed: $(tail -n 1 "$WORK/mine.log")"
must expect mine "$WORK/mine.json"

step "validate the store"
kb validate "$WORK/store" --full --json >"$WORK/validate.json" 2>"$WORK/validate.log"
status=$?
[ "$status" -le 1 ] || fail "git kb validate exited $status: $(tail -n 1 "$WORK/validate.log")"
must expect validate "$WORK/validate.json"

step "optimize (run 2, warm start from the store)"
kernel_repo "$WORK/run-2-repo"
optimize run-2 --warm-start on --kb "$WORK/store"
must expect warm-start "$WORK/run-2/result.json"

step "table"
echo
must table --device "$WORK/device.json" --run-1 "$WORK/run-1" --run-2 "$WORK/run-2" \
  --mine "$WORK/mine.json" --validate "$WORK/validate.json" \
  --bundle-name "$(basename "$RUN_BUNDLE")" --title "$TITLE"
echo
TOTAL=$((SECONDS - STARTED))
echo "gpu_check: all steps passed in $TOTAL s; everything is under $WORK"
if [ "$TOTAL" -gt "$TARGET_SECONDS" ]; then
  echo "gpu_check: note: over the $TARGET_SECONDS s target (install time included)"
fi
