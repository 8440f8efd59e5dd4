#!/usr/bin/env bash
# The GPU measurements, in steps, run from the repository root; the
# steps of 'all' in one call of under 10 minutes on an H200:
#
#     bash analysis/on_gpu.sh            # or some steps: ... sweep throughput
#
# Steps (in the order given; 'all' = env sweep throughput torch tests):
#   env         nvidia-smi, Python and library versions (always run first)
#   sweep       all 2^32 float32 inputs of the six float32 GPU kernels and of
#               the peers (PyTorch, JAX, CuPy) against the float64 GPU kernel
#               -> $OUT/sweep_float32_gpu.json
#   throughput  kernel time against the device-to-device copy at 2^20, 2^26,
#               2^28 (ours and the peers; float32, float64, and the bfloat16
#               and float16 kernels of gelu and gelu_backward), host time
#               per call, the sweep's accuracy beside it
#               -> $OUT/gpu_throughput.md
#   tune        gelu and gelu_backward under the grid of launch
#               configurations at 2^26 (24 of them; minutes)
#               -> $OUT/gpu_tune.md
#   tests       the GPU tests on the device (bit equality with the CPU
#               compilation, the fast launch taken and equal, the sweep)
#   half        the 2-byte kernels alone: their GPU tests (the CPU's bits on
#               every pattern, each variant, unaligned operands, the fast
#               launch), then gelu and gelu_backward at 2^20, 2^26, 2^28
#               beside PyTorch's -> $OUT/gpu_throughput_half.md (minutes)
#   sass        analysis.gpu.sass's static estimate, to set beside the timings
#               (compiled without a GPU: not in 'all'; run it on any machine)
#   torch       tests/test_torch.py's CUDA tests (needs torch with CUDA), then
#               gelu_numba.torch against nn.GELU: host µs per call, forward +
#               backward at 2^24 float32 and bfloat16 -> $OUT/torch_cuda.md
# Each step's output goes to $OUT/STEP.log and to stdout.  Afterwards, here:
# commit the files under the names that analysis/gpu/docs.py's RUN lists
# (one per device: gpu_throughput_h200.md, ...), then
# `python -m analysis.gpu.docs --update` writes docs/results/gpu.md and
# `python -m analysis.gpu.choice --update` the float32 kernel each measured
# device launches (gelu_numba/targets/cuda/choice.py).  A step runs under
# the smaller of STEP_LIMIT_S (default 400 s) and what is left of TOTAL_S
# (default 570 s: the whole script inside one 600-s call); one that fails or
# runs out of time is reported and the next one runs, one with under 20 s
# left is skipped and counted as failed; the exit status is the number of
# failed steps.
#
# OUT: where the results go (the runner sets it; default
# analysis/results/gpu_run).  PYTHON: the interpreter (default python3).
#
# NumPy: numba-cuda 0.30.4 does not import under NumPy 2.5 (it registers
# np.row_stack, which 2.5 removed), and the device image has NumPy 2.5.
# Wheels in .whl/ (for instance numpy 2.4, downloaded for cp312 as the
# device README says) are installed into /tmp/site first and put on
# PYTHONPATH; without them, and only under NumPy >= 2.5, a sitecustomize in
# /tmp/site restores np.row_stack as np.vstack for these processes (a
# measurement shim; gelu_numba itself never patches NumPy).
set -u -o pipefail

OUT=${OUT:-analysis/results/gpu_run}
PYTHON=${PYTHON:-python3}
LIMIT=${STEP_LIMIT_S:-400}
DEADLINE=$((SECONDS + ${TOTAL_S:-570}))
SITE=/tmp/site
mkdir -p "$OUT" "$SITE"
export PYTHONUNBUFFERED=1
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

if compgen -G ".whl/*.whl" >/dev/null; then
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$SITE" .whl/*.whl || exit 1
elif "$PYTHON" -c 'import numpy, sys; sys.exit(not hasattr(numpy, "row_stack"))'; then
    :
else
    cat >"$SITE/sitecustomize.py" <<'EOF'
# analysis/on_gpu.sh: numba-cuda 0.30.4 registers np.row_stack, gone in NumPy 2.5
import numpy
if not hasattr(numpy, "row_stack"):
    numpy.row_stack = numpy.vstack
EOF
    echo "on_gpu: NumPy $("$PYTHON" -c 'import numpy; print(numpy.__version__)') has no row_stack: shimmed for numba-cuda"
fi

failed=0
step() {    # step NAME COMMAND...: run with the time limit, log, report
    local name=$1 rc start limit=$((DEADLINE - SECONDS - 15))
    shift
    [ "$limit" -gt "$LIMIT" ] && limit=$LIMIT
    if [ "$limit" -lt 20 ]; then
        echo "== $name: skipped, ${limit} s left of TOTAL_S" | tee "$OUT/$name.log"
        failed=$((failed + 1))
        return
    fi
    echo "== $name (limit $limit s): $*"
    start=$SECONDS
    timeout --signal=INT --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
    rc=$?
    echo "== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$OUT/$name.log"
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(all)
[ "${steps[*]}" = all ] && steps=(sweep throughput torch tests)

step env bash -c "nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv;
    $PYTHON -c 'import sys, numpy, numba, numba_cuda; from numba import cuda
print(sys.version.split()[0], \"numpy\", numpy.__version__, \"numba\", numba.__version__,
      \"numba-cuda\", numba_cuda.__version__)
print(cuda.get_current_device().name, \"cc\", cuda.get_current_device().compute_capability)'"

for s in "${steps[@]}"; do
    case $s in
        sweep)
            step sweep "$PYTHON" -m analysis.sweep_float32 --device gpu --peers all --no-progress \
                --out "$OUT/sweep_float32_gpu.json" ;;
        throughput)
            acc=()
            [ -f "$OUT/sweep_float32_gpu.json" ] && acc=(--accuracy "$OUT/sweep_float32_gpu.json")
            step throughput "$PYTHON" -m analysis.gpu.throughput --sizes '2**20,2**26,2**28' \
                --peers all "${acc[@]}" --out "$OUT/gpu_throughput.md" ;;
        tune)
            step tune "$PYTHON" -m analysis.gpu.throughput --sizes '2**26' --functions \
                gelu,gelu_backward --peers none --tune --out "$OUT/gpu_tune.md" ;;
        half)
            step half bash -c "$PYTHON -m pytest -q -p no:cacheprovider -o addopts= \
                tests/test_gpu.py tests/test_fast_launch.py -k 'half or wide' &&
                $PYTHON -m analysis.gpu.throughput --sizes '2**20,2**26,2**28' \
                --functions gelu,gelu_backward --peers torch_gelu,torch_gelu_backward \
                --out '$OUT/gpu_throughput_half.md'" ;;
        sass)
            step sass "$PYTHON" -m analysis.gpu.sass --out "$OUT/gpu_sass.md" ;;
        tests)
            # (four pytest-xdist workers where it is installed: the step is
            # mostly compilation, which the host's cores share out)
            workers=()
            "$PYTHON" -c 'import xdist' 2>/dev/null && workers=(-n 4 --dist worksteal)
            step tests "$PYTHON" -m pytest -q -p no:cacheprovider -o addopts= --durations=15 \
                "${workers[@]}" tests/test_gpu32.py tests/test_lean32.py tests/test_fast_launch.py \
                tests/test_sweep_gpu.py tests/test_vector_io.py tests/test_output_pool.py \
                tests/test_gpu.py ;;
        torch)
            step torch bash -c "$PYTHON -m pytest -q -p no:cacheprovider -o addopts= tests/test_torch.py -k cuda &&
                $PYTHON -m analysis.gpu.torch_cuda --out '$OUT/torch_cuda.md'" ;;
        *)
            echo "on_gpu: unknown step '$s' (env, sweep, throughput, tune, half, sass, tests, torch, all)"
            failed=$((failed + 1)) ;;
    esac
done
echo "on_gpu: $failed step(s) failed; results in $OUT"
exit "$failed"
