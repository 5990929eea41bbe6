#!/usr/bin/env bash
# A GPU check of a runtime change against the runtime before it (written for the
# small-rows kernels, 2026-12-05; run on the device from the repository root, carrying
# [".whl", ".gpu-unit", "bench/build", "build-rt-cuda"]; here first: scripts/build_wheel.sh .whl,
# utils/gpu_python.sh --pack-wheel, then the te-kernels-selftest stripped and xz-ed into
# .gpu-unit/te-kernels-selftest.xz (--pack-wheel empties .gpu-unit), bench/compile_cases.sh
# of the 16x256 cases (bf16, fp8-current, fp8-delayed) and the 8192 FP8 ones into
# bench/build, and the runtime before the change stripped and xz-ed into
# build-rt-cuda/lib/libte_runtime.so.xz): self test, CUDA unit tests, every result of
# bench.py's checked steps under the old and new runtime compared bit for bit (--dump,
# utils/same_dumps.py), bench.py's 16-token CUDA graphs before and after, and the seed
# cases' kernel profiles. Results under $OUT.
# NEW_LIBS (default bench/build): the new runtime's libraries, when a compiler change
# makes libraries the old runtime cannot run (bench/compile_cases.sh with the new
# te-compile into that folder, carried too); the identity check then compares the old
# runtime on the old libraries with the new on the new, by library name. The profiles
# run with TE_RT_PDL=0: with programmatic launches a kernel's measured time includes
# its wait for the kernel before it, so per-kernel times would not add up.
# OLD_LIBS (default bench/build): the old runtime's libraries. NEW_RT_XZ (optional): the
# new runtime itself (a CUDA build's libte_runtime.so, stripped and xz-ed), instead of the
# wheel's, for a runtime change timed without a new wheel; build-rt-cuda/lib/ may then be
# absent, and the wheel's runtime is the old one.
set +u
NEW_LIBS=${NEW_LIBS:-bench/build}
OLD_LIBS=${OLD_LIBS:-bench/build}
: "${OUT:?set OUT}"
T=/tmp/te-wheel; mkdir -p $T/site $T/cache $T/old
rm -rf $T/site/* $T/dump_old $T/dump_new
# .gpu-unit/slim.tar.xz, when there, is the wheel's tree xz-ed (21 MB against the wheel's 31:
# the call stays under 64 MiB), made by `utils/gpu_python.sh --pack-wheel`.
if [[ -f .gpu-unit/slim.tar.xz ]]; then
  tar xJf .gpu-unit/slim.tar.xz -C $T/site
else
  python3 -m pip install -q --no-deps --no-index --disable-pip-version-check --target $T/site .whl/*.whl
fi
if [[ -f build-rt-cuda/lib/libte_runtime.so.xz ]]; then
  xz -dc build-rt-cuda/lib/libte_runtime.so.xz > $T/old/libte_runtime.so
else
  cp $T/site/te_mlir/_native/lib/libte_runtime.so $T/old/libte_runtime.so
fi
mkdir -p $T/new
if [[ -n $NEW_RT_XZ ]]; then
  xz -dc "$NEW_RT_XZ" > $T/new/libte_runtime.so
else
  cp $T/site/te_mlir/_native/lib/libte_runtime.so $T/new/libte_runtime.so
fi
xz -dc .gpu-unit/te-kernels-selftest.xz > $T/selftest; chmod +x $T/selftest
export PYTHONPATH=$T/site TE_MLIR_CACHE=$T/cache PYTHONUNBUFFERED=1
RT=$T/new/libte_runtime.so
echo "== selftest"; (cd $T && timeout 150 ./selftest > $OUT/selftest.log 2>&1; echo "selftest rc $?"; tail -3 $OUT/selftest.log)
echo "== unit"; timeout 200 bash utils/gpu_python.sh $OUT/u unit 2>&1 | tail -6
echo "== bench16 graphs old/new"
for v in old new; do if [ $v = old ]; then R=$T/old/libte_runtime.so; L=$OLD_LIBS; else R=$RT; L=$NEW_LIBS; fi
  timeout 100 python3 bench/bench.py --runtime $R --lib-dir $L --cases 16x256 --recipes bf16,fp8-current,fp8-delayed --te off --graph only --no-compile --no-extras --reps 7 --dump $T/dump_$v --out $OUT/bench16_$v.json > $OUT/bench16_$v.log 2>&1; echo "bench $v rc $?"
  timeout 100 python3 bench/bench.py --runtime $R --lib-dir $L --cases 8192 --recipes fp8-current,fp8-delayed --te off --graph off --no-compile --no-extras --reps 1 --min-rep-s 0.01 --dump $T/dump_$v --out $OUT/bench8k_$v.json > $OUT/bench8k_$v.log 2>&1; echo "bench8k $v rc $?"; done
echo "== identity old vs new runtime (every result of each checked step)"
python3 utils/same_dumps.py $T/dump_old $T/dump_new 2>&1 | tee $OUT/identity.txt
echo "== profiles"
for c in ln_linear_16x256x256 ln_linear_16x256x768 ln_mlp_gelu_16x256x1024; do for r in fp8-current fp8-delayed; do [ -f $NEW_LIBS/$c.$r.so ] || continue; TE_RT_PDL=0 timeout 40 python3 bench/profile_step.py $NEW_LIBS/$c.$r.so --runtime $RT --steps 5 > $OUT/prof_$c.$r.log 2>&1; done; done
