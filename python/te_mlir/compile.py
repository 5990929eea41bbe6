"""te_mlir.compile: te-compile with an on-disk cache keyed by content."""
import hashlib
import json
import os
import subprocess
import tempfile
import warnings
from pathlib import Path

from ._abi import TeMlirError, TeMlirWarning, find_build

__all__ = ["compile", "te_compile_path", "cache_dir"]

RECIPES = ("bf16", "fp8-delayed", "fp8-current", "fp8-block", "mxfp8", "nvfp4")
_TOOL_ID = {}


def te_compile_path():
    return find_build("bin/te-compile") / "bin" / "te-compile"


def _tool_id(exe):
    """Identifies the te-compile binary by its sha256 (its `--version` prints only
    LLVM's version, the same for every te-mlir build, and needs the binary to run:
    a cache filled on one machine then also serves one where te-compile cannot run)."""
    st = exe.stat()
    key = (str(exe), st.st_mtime_ns, st.st_size)
    if key not in _TOOL_ID:
        _TOOL_ID[key] = "te-compile sha256 " + hashlib.sha256(exe.read_bytes()).hexdigest()
    return _TOOL_ID[key]


def _cannot_start_hint(p, exe, out):
    """What to do when te-compile could not even start here (the loader's exit 127, as
    for a developer build, linked against LLVM/MLIR's shared libraries, on a machine
    without them): '' for any other failure."""
    if p.returncode != 127 and "error while loading shared libraries" not in p.stderr:
        return ""
    return (f"\nte-compile ({exe}) cannot start on this machine, and the cache has no "
            f"library for this source and these options ({out.name}). A developer "
            "build's te-compile needs LLVM/MLIR's shared libraries: use the wheel's "
            "te-compile (static), or compile on the build machine into a cache carried "
            "here (TE_MLIR_CACHE, with the same te-compile binary; docs/python.md).")


def cache_dir(cache_dir=None):
    d = cache_dir or os.environ.get("TE_MLIR_CACHE") or Path.home() / ".cache" / "te-mlir"
    return Path(d).expanduser()


def _looks_like_path(source):
    """A PathLike, or a one-line string that is not MLIR (no newline, no func.func /
    module / braces): a file name."""
    if isinstance(source, os.PathLike):
        return True
    return isinstance(source, str) and "\n" not in source and "{" not in source and \
        "func.func" not in source


def strict_default(strict=None):
    """`strict`, else TE_MLIR_STRICT=1 (te-compile's warnings become errors)."""
    if strict is not None:
        return bool(strict)
    return os.environ.get("TE_MLIR_STRICT", "") not in ("", "0")


def _warnings_of(stderr):
    """te-compile's diagnostics `FILE:LINE:COL: warning: TEXT` -> [TEXT]."""
    out = []
    for line in stderr.splitlines():
        _, sep, text = line.partition(": warning: ")
        if sep and text not in out:
            out.append(text.strip())
    return out


def _report(found, name, args, strict):
    """te-compile's warnings of a library, raised as TeMlirWarning (TeMlirError when
    strict), on every compile and every cache hit."""
    if not found:
        return
    what = f"te-compile ({name}, {' '.join(args)})"
    if strict:
        raise TeMlirError(f"{what}: " + "; ".join(found) + " (strict: warnings are errors; "
                          "strict=False / TE_MLIR_STRICT=0 runs it anyway)")
    for w in found:
        warnings.warn(f"{what}: {w}", TeMlirWarning, stacklevel=3)


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _intact(out):
    """A cached library matches the size and sha256 recorded when it was compiled
    (`<stem>.sha256`: "<sha256> <size>"). Entries cached before the record existed pass."""
    rec = out.with_suffix(".sha256")
    try:
        want = rec.read_text().split()
    except OSError:
        return True
    try:
        return (len(want) == 2 and out.stat().st_size == int(want[1])
                and _digest(out) == want[0])
    except (OSError, ValueError):
        return False


# te-compile options te_mlir.compile sets itself (the output, its kind, the recipe and
# the target it keys the cache by), refused in extra_args
_OWN_OPTIONS = ("-o", "--emit", "--recipe", "--target", "--train", "--checkpoint",
                "--weight-cache")


def _extra_args(extra_args):
    """`extra_args` as te-compile arguments: a sequence of strings (a single string
    would be split into characters), none of the options compile() sets itself."""
    if isinstance(extra_args, (str, bytes, os.PathLike)):
        raise TypeError("te_mlir.compile: extra_args must be a list of te-compile "
                        f"arguments, got the single {type(extra_args).__name__} "
                        f"{extra_args!r} (write [{extra_args!r}])")
    out = [str(a) for a in extra_args]
    for a in out:
        flag = a.split("=", 1)[0]
        if flag in _OWN_OPTIONS:
            raise TeMlirError(f"te_mlir.compile: extra_args {a!r}: {flag} is set by "
                              "te_mlir.compile itself (its keyword arguments: recipe=, "
                              "target=, train=, checkpoint=, weight_cache=; the output is "
                              "the cache's)")
    return out


def compile(source, *, recipe="bf16", train=True, checkpoint=False, weight_cache=False,
            target="auto", extra_args=(), cache_dir=None, strict=None, rebuild=False):
    """Compiles `source` (a path to, or the text of, a torch-mlir export or te IR) with
    te-compile and returns the path of the shared library.

    Cached under `cache_dir` (else $TE_MLIR_CACHE, else ~/.cache/te-mlir) by the sha256
    of the source text, the options and the te-compile binary's sha256. Raises TeMlirError with te-compile's stderr on failure.

    te-compile's warnings (e.g. a module op that runs unquantized because its dims do not
    fit the recipe's alignment) are kept beside the cached library (`<stem>.warnings.json`)
    and raised as TeMlirWarning each time the library is compiled or found in the cache;
    with `strict` (default: TE_MLIR_STRICT=1) they are a TeMlirError instead.

    A cached library whose size or sha256 is not the one recorded when it was compiled
    (truncated by a full disk or a killed copy, or edited) is compiled again, with a
    TeMlirWarning; ``rebuild=True`` compiles again whatever the cache holds (the
    modules do so once when a cached library fails to load)."""
    if isinstance(source, str) and not source.strip():
        raise TeMlirError("te_mlir.compile: source is empty (a path, or the text of a "
                          "torch-mlir export or te IR)")
    if _looks_like_path(source):
        try:
            text = Path(source).read_text()
        except OSError as ex:
            raise TeMlirError(f"te_mlir.compile: cannot read {source}: {ex}") from None
        name = Path(source).stem
    elif isinstance(source, str):
        text, name = source, "module"
    else:
        raise TypeError(f"te_mlir.compile: source must be a path or MLIR text, got "
                        f"{type(source).__name__}")
    if recipe not in RECIPES and not str(recipe).startswith("#te."):
        raise TeMlirError(f"te_mlir.compile: unknown recipe {recipe!r} (one of "
                          + ", ".join(RECIPES) + ", or a #te.<recipe> attribute)")
    if weight_cache and not train:
        raise TeMlirError("te_mlir.compile: weight_cache=True needs train=True "
                          "(te-compile --weight-cache emits <fn>_fwd_cached)")
    exe = te_compile_path()
    args = [f"--recipe={recipe}", f"--target={target}"]
    if train:
        args.append("--train")
    if checkpoint:
        args.append("--checkpoint")
    if weight_cache:
        args.append("--weight-cache")
    args += _extra_args(extra_args)
    key = hashlib.sha256(json.dumps({"source": text, "args": args,
                                     "tool": _tool_id(exe)}).encode()).hexdigest()
    d = Path(globals()["cache_dir"](cache_dir))
    d.mkdir(parents=True, exist_ok=True)
    out = d / f"{name}-{key[:24]}.so"
    strict = strict_default(strict)
    warn_file = out.with_suffix(".warnings.json")
    if out.exists() and not rebuild and not _intact(out):
        warnings.warn(f"te_mlir.compile: the cached library {out} is not the one compiled "
                      "there (its size or sha256 differs from the record: truncated or "
                      "edited); compiling it again", TeMlirWarning, stacklevel=2)
        rebuild = True
    if out.exists() and not rebuild:
        try:
            found = json.loads(warn_file.read_text()) if warn_file.exists() else []
        except (OSError, ValueError):
            found = []
        _report(found, name, args, strict)
        return out
    with tempfile.TemporaryDirectory(dir=d, prefix=".tmp-") as tmp:
        src = Path(tmp) / f"{name}.mlir"
        src.write_text(text)
        so = Path(tmp) / f"{name}.so"
        cmd = [str(exe), str(src), "-o", str(so)] + args
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0 or not so.exists():
            raise TeMlirError(f"te-compile failed (exit {p.returncode}): {' '.join(cmd)}\n"
                              + (p.stderr.strip() or p.stdout.strip())
                              + _cannot_start_hint(p, exe, out))
        found = _warnings_of(p.stderr)
        if found:
            (Path(tmp) / f"{name}.warnings.json").write_text(json.dumps(found))
        # what else te-compile wrote beside the library (the header, --partition's
        # residual module, ...) keeps its suffix next to the cached .so
        for f in Path(tmp).iterdir():
            if f not in (src, so) and f.name.startswith(name + "."):
                os.replace(f, d / (out.stem + f.name[len(name):]))
        (Path(tmp) / "record").write_text(f"{_digest(so)} {so.stat().st_size}\n")
        os.replace(Path(tmp) / "record", out.with_suffix(".sha256"))
        os.replace(so, out)  # last and atomic: a cached .so means everything is there
    _report(found, name, args, strict)
    return out
