#!/usr/bin/env python3
"""Runs TransformerEngine's own PyTorch module tests against te_mlir.torch and classifies
every case (docs/python.md, "Running TransformerEngine's tests").

  run.py --te-src TE [--mode cpu|gpu] [--tests test_numerics.py::test_linear_accuracy,...]
         [--sample N] [-k EXPR] [--fill-cuda-cache] --json OUT.json
  run.py --te-src TE --export DIR     # the TE files a run needs, for a machine without TE

TE is a TransformerEngine checkout or git directory (the mirror's bare repo; --te-rev
picks the revision, default HEAD). Its test files are extracted into a temporary
directory at each run and run there unchanged, with pytest and the plugin in shim/:
cpu mode stands a fake `transformer_engine` package (shim/fake) in for TE, gpu mode
imports the installed TE and replaces its module classes and autocast with te_mlir's.
Categories: passed, failed, error, skipped (by TE's own conditions), unsupported
(te_mlir refused the case by name); tests of other TE modules are deselected ("not a
target") and reported only as a count."""
import argparse
import collections
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_TESTS = ("test_numerics.py", "test_sanity.py", "test_jit.py")
# besides the test files: their helper module and TE's recipe module (cpu mode)
HELPERS = ("tests/pytorch/utils.py",)
RECIPE_SRC = "transformer_engine/common/recipe/__init__.py"
STATUSES = ("passed", "failed", "error", "unsupported", "skipped")


def te_file(te_src, rev, path):
    """The text of `path` in the TE source (a checkout, or a git directory at `rev`)."""
    src = Path(te_src)
    if (src / path).is_file():
        return (src / path).read_text()
    git = ["git", "--git-dir", str(src if (src / "HEAD").exists() else src / ".git")]
    p = subprocess.run(git + ["show", f"{rev}:{path}"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"run.py: cannot read {path} from {te_src} at {rev}: {p.stderr.strip()}")
    return p.stdout


def extract(te_src, rev, files, into):
    for f in files:
        (into / f).write_text(te_file(te_src, rev, "tests/pytorch/" + f))
    for h in HELPERS:
        (into / Path(h).name).write_text(te_file(te_src, rev, h))
    recipe = into / "_te_recipe.py"
    recipe.write_text(te_file(te_src, rev, RECIPE_SRC))
    return recipe


def pytest_command(args, tmp):
    by_file = collections.OrderedDict()
    for t in (args.tests.split(",") if args.tests else DEFAULT_TESTS):
        f, _, fn = t.strip().partition("::")
        by_file.setdefault(f, []).append(fn)
    targets = []
    for f, fns in by_file.items():
        targets += [str(tmp / f)] if "" in fns else [f"{tmp / f}::{fn}" for fn in fns]
    cmd = [args.python, "-m", "pytest", "-p", "te_suite_plugin", "-p", "no:cacheprovider",
           "-q", "-rN", "--no-header", "--tb=no", "-W", "ignore::DeprecationWarning",
           f"--rootdir={tmp}", *targets]
    if args.k:
        cmd += ["-k", args.k]
    return list(by_file), cmd


def environment(args, tmp, recipe):
    env = dict(os.environ)
    shim = HERE / "shim"
    paths = [str(shim)] + ([str(shim / "fake")] if args.mode == "cpu" else [])
    paths += [str(REPO / "python")] + [p for p in env.get("PYTHONPATH", "").split(":") if p]
    env["PYTHONPATH"] = ":".join(paths)
    env.setdefault("TE_MLIR_BUILD", str(REPO / "build"))
    env.update(TE_SUITE_MODE=args.mode, TE_SUITE_RESULTS=str(tmp / "results.json"),
               TE_SUITE_SAMPLE=str(args.sample), TE_SUITE_RECIPE_SRC=str(recipe),
               PYTHONUNBUFFERED="1")
    if args.mode == "cpu":
        env["TE_SUITE_TARGET"] = "auto" if args.fill_cuda_cache else "cpu"
    if args.fill_cuda_cache and "TE_MLIR_CACHE" not in env:
        sys.exit("run.py: --fill-cuda-cache needs TE_MLIR_CACHE (the cache dir the GPU run "
                 "will read, e.g. build-gpu/cache)")
    return env


def _pytest(cmd, env, tmp, chunk=None):
    """Runs pytest once (on the chunk "i/n" of the target cases) -> (results, exit code)."""
    out = tmp / "results.json"
    out.unlink(missing_ok=True)
    env = dict(env, **({"TE_SUITE_CHUNK": chunk} if chunk else {}))
    print("+", f"TE_SUITE_CHUNK={chunk}" if chunk else "", " ".join(cmd), flush=True)
    rc = subprocess.run(cmd, cwd=tmp, env=env).returncode
    if not out.exists():
        sys.exit(f"run.py: pytest exited {rc} without results (collection failed?)")
    return json.loads(out.read_text()), rc


def run_chunks(args, cmd, env, tmp):
    """The target cases in processes of at most --chunk cases each (every library a process
    loads stays registered with torch: the op library holds at most 2048 ops), merged."""
    if args.chunk <= 0:
        return _pytest(cmd, env, tmp)
    res, _ = _pytest(cmd + ["--collect-only", "-q"], env, tmp)
    n = max(1, -(-res.get("targets", 0) // args.chunk))
    merged, worst = {"cases": {}, "deselected": res["deselected"]}, 0
    for i in range(n):
        r, rc = _pytest(cmd, env, tmp, f"{i}/{n}")
        merged["cases"].update(r["cases"])
        worst = max(worst, rc)
    return merged, worst


def _group_key(msg):
    msg = re.sub(r"te_mlir_[0-9a-f]{12}", "te_mlir_#", re.sub(r"\.tmp-\w+", ".tmp-#", msg))
    return re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "#", msg)


def summarize(res, files):
    """The JSON report: counts per file and status, and every non-passing message."""
    counts = {f: collections.Counter() for f in files}
    messages = {s: collections.Counter() for s in ("failed", "error", "unsupported", "skipped")}
    examples, cases = {}, {}
    for nodeid, r in res["cases"].items():
        f = nodeid.split("::")[0].rsplit("/", 1)[-1]
        counts.setdefault(f, collections.Counter())[r["status"]] += 1
        if r["status"] != "passed":
            key = _group_key(r["message"])
            messages[r["status"]][key] += 1
            examples.setdefault(key, (nodeid.split("/")[-1], r["message"]))
            if r["status"] != "skipped":  # (skips: counted by message only)
                cases[nodeid.split("/")[-1]] = [r["status"], r["message"]]
    for nodeid, reason in res["deselected"].items():
        f = nodeid.split("::")[0].rsplit("/", 1)[-1]
        counts.setdefault(f, collections.Counter())["deselected: " + reason.split(" (")[0]] += 1
    return {
        "counts": {f: dict(c) for f, c in counts.items()},
        "messages": {s: [{"count": n, "message": examples[k][1], "example": examples[k][0]}
                         for k, n in c.most_common()] for s, c in messages.items()},
        "cases": cases,
    }


def print_report(rep):
    cols = list(STATUSES)
    extra = sorted({k for c in rep["counts"].values() for k in c if k not in cols})
    head = f"{'file':24}" + "".join(f"{c:>12}" for c in cols) + "".join(
        f"  {c}" for c in extra)
    print(head)
    for f, c in rep["counts"].items():
        ran = sum(c.get(s, 0) for s in cols if s != "skipped")
        print(f"{f:24}" + "".join(f"{c.get(s, 0):>12}" for s in cols)
              + "".join(f"  {c.get(e, 0)}" for e in extra)
              + (f"   unsupported {100 * c.get('unsupported', 0) / ran:.1f}% of run"
                 if ran else ""))
    for s in ("failed", "error", "unsupported"):
        if rep["messages"][s]:
            print(f"\n== {s}, by message")
            for m in rep["messages"][s]:
                head, _, err = m["message"].partition(" | ")
                text = head[:200] + (" ... | " + err[:300] if err else "")
                print(f"{m['count']:6}  {text}\n        e.g. {m['example']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--te-src", required=True)
    ap.add_argument("--te-rev", default="HEAD")
    ap.add_argument("--mode", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--tests", help="comma list of FILE or FILE::TEST (default: "
                    + ", ".join(DEFAULT_TESTS) + ")")
    ap.add_argument("-k", help="pytest -k expression")
    ap.add_argument("--sample", type=int, default=1,
                    help="run one target case in N (chosen by a hash of its id) of each test "
                    "function with at least 100 target cases")
    ap.add_argument("--fill-cuda-cache", action="store_true",
                    help="cpu mode: compile each library for target auto (CPU and CUDA code) "
                    "into $TE_MLIR_CACHE, which a gpu-mode run then reads")
    ap.add_argument("--chunk", type=int, default=200, metavar="N",
                    help="at most N target cases per pytest process (0: one process; default "
                    "200: a process keeps every library it loaded, and torch's op table of "
                    "te_mlir's op library is bounded)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--keep", action="store_true", help="keep the extracted test directory")
    ap.add_argument("--export", metavar="DIR",
                    help="only write the TE files a run reads into DIR, in a checkout's layout "
                    "(a --te-src for a machine without TE's source, such as the H200)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.export:
        for f in [f"tests/pytorch/{t}" for t in DEFAULT_TESTS] + list(HELPERS) + [RECIPE_SRC]:
            (Path(args.export) / f).parent.mkdir(parents=True, exist_ok=True)
            (Path(args.export) / f).write_text(te_file(args.te_src, args.te_rev, f))
        print("wrote", args.export)
        return 0
    if not args.json:
        ap.error("--json is required")
    if args.fill_cuda_cache and args.mode != "cpu":
        ap.error("--fill-cuda-cache is for cpu mode (the GPU machine has no te-compile)")
    tmp = Path(tempfile.mkdtemp(prefix="te_suite-"))
    try:
        files, cmd = pytest_command(args, tmp)
        recipe = extract(args.te_src, args.te_rev, files, tmp)
        env = environment(args, tmp, recipe)
        start = datetime.datetime.now(datetime.timezone.utc)
        res, rc = run_chunks(args, cmd, env, tmp)
        rep = summarize(res, files)
        rep.update(mode=args.mode, te_src=str(args.te_src), te_rev=args.te_rev,
                   tests=args.tests or ",".join(DEFAULT_TESTS), sample=args.sample, k=args.k,
                   fill_cuda_cache=args.fill_cuda_cache, pytest_rc=rc,
                   started=start.isoformat(timespec="seconds"),
                   seconds=round((datetime.datetime.now(datetime.timezone.utc)
                                  - start).total_seconds()))
        print()
        print_report(rep)
        Path(args.json).write_text(json.dumps(rep, indent=1) + "\n")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept", tmp)
    bad = sum(c.get("failed", 0) + c.get("error", 0) for c in rep["counts"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
