"""te_mlir.Library: a te-compile'd shared library opened through the runtime's module
client (te_module_open: the file is checked, dlopened, its te_module_info() validated),
with its entries described from the module info. Torch-free: shapes are ints, buffers
are addresses.
"""
import ctypes
import hashlib
import json
import re
from pathlib import Path

from . import _abi
from ._abi import TeMlirError, i64s

__all__ = ["Library", "Entry", "Step", "TensorSpec", "DimExpr", "parse_dim"]

# --------------------------------------------------------------------------- dim expressions


class DimExpr:
    """A parsed dim expression of the module info (lib/Runtime/module/DimExpr.h):

        expr   := term (('+' | '-') term)*
        term   := factor (('*' | '/') factor)*      ('/' divides exactly)
        factor := INTEGER | 'd' INTEGER | '(' expr ')'
                | ('ceildiv' | 'roundup') '(' expr ',' expr ')'

    ``evaluate(dims, exact=...)`` works on ints and on torch SymInts alike (only +, -, *,
    //, % and comparisons are used); ``exact(value, divisor, text)`` is called for every
    '/' (default: raise unless divisible; the fake impls pass a torch._check). On ints it
    fails where the runtime's evaluation does (te_module_eval_dim; test/python/test_abi.py
    compares the two): a value outside int64, a division by a non-positive value, an
    inexact division, a symbol beyond `dims`, a negative result."""

    def __init__(self, text):
        self.text = str(text)
        self._pos = 0
        self._depth = 0
        self.tree = self._expr()
        self._skip()
        if self._pos != len(self.text):
            self._fail(f"unexpected {self.text[self._pos]!r}")
        self.symbols = sorted(self._symbols(self.tree))

    # parsing
    def _fail(self, why):
        raise TeMlirError(f"malformed dim expression {self.text!r} at column {self._pos + 1}: "
                          + why)

    def _skip(self):
        while self._pos < len(self.text) and self.text[self._pos] == " ":
            self._pos += 1

    def _consume(self, c):
        self._skip()
        if self._pos < len(self.text) and self.text[self._pos] == c:
            self._pos += 1
            return True
        return False

    def _expect(self, c):
        if not self._consume(c):
            self._fail(f"expected {c!r}")

    def _expr(self):
        v = self._term()
        while True:
            if self._consume("+"):
                v = ("+", v, self._term())
            elif self._consume("-"):
                v = ("-", v, self._term())
            else:
                return v

    def _term(self):
        v = self._factor()
        while True:
            if self._consume("*"):
                v = ("*", v, self._factor())
            elif self._consume("/"):
                v = ("/", v, self._factor())
            else:
                return v

    def _factor(self):
        self._depth += 1
        if self._depth > 64:
            self._fail("more than 64 levels of nesting")
        try:
            self._skip()
            if self._consume("("):
                v = self._expr()
                self._expect(")")
                return v
            m = re.match(r"[A-Za-z0-9]+", self.text[self._pos:])
            if not m:
                self._fail("unexpected end" if self._pos >= len(self.text)
                           else f"unexpected {self.text[self._pos]!r}")
            word = m.group(0)
            self._pos += len(word)
            if word.isdigit() and len(word) <= 18:  # fits in int64, as the runtime reads it
                return ("n", int(word))
            if re.fullmatch(r"d\d{1,18}", word):
                return ("d", int(word[1:]))
            if word in ("ceildiv", "roundup"):
                self._expect("(")
                a = self._expr()
                self._expect(",")
                b = self._expr()
                self._expect(")")
                return (word, a, b)
            self._pos -= len(word)
            self._fail(f"unknown word {word!r}")
        finally:
            self._depth -= 1

    def _symbols(self, t):
        if t[0] == "d":
            return {t[1]}
        if t[0] == "n":
            return set()
        return self._symbols(t[1]) | self._symbols(t[2])

    # evaluation
    def evaluate(self, dims, exact=None):
        def ex(v, d):
            if exact is not None:
                exact(v, d, self.text)
            elif v % d != 0:
                raise TeMlirError(f"dim expression {self.text!r}: {v} is not divisible by {d} "
                                  f"(the recipe needs a multiple of {d} there)")

        def fits(v):
            if isinstance(v, int) and not _INT64_MIN <= v <= _INT64_MAX:
                raise TeMlirError(f"dim expression {self.text!r} overflows int64")
            return v

        def ev(t):
            op = t[0]
            if op == "n":
                return t[1]
            if op == "d":
                if t[1] >= len(dims):
                    raise TeMlirError(f"dim expression {self.text!r}: unknown symbol d{t[1]}")
                return dims[t[1]]
            a, b = ev(t[1]), ev(t[2])
            if op == "+":
                return fits(a + b)
            if op == "-":
                return fits(a - b)
            if op == "*":
                return fits(a * b)
            if isinstance(b, int) and b <= 0:
                raise TeMlirError(f"dim expression {self.text!r}: division by {b}")
            if op == "/":
                ex(a, b)
                return a // b
            q = -((-a) // b)  # ceil(a / b)
            return q if op == "ceildiv" else fits(q * b)

        v = ev(self.tree)
        if isinstance(v, int) and v < 0:
            raise TeMlirError(f"dim expression {self.text!r} is {v} at these dims (a dim must "
                              "be >= 0)")
        return v

    def __repr__(self):
        return f"DimExpr({self.text!r})"


_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1
_DIM_CACHE = {}


def parse_dim(d):
    """An int for a fixed dim, else a DimExpr (cached per text)."""
    if isinstance(d, int):
        return d
    e = _DIM_CACHE.get(d)
    if e is None:
        e = _DIM_CACHE[d] = DimExpr(d)
    return e


def eval_dim(d, dims, exact=None):
    d = parse_dim(d)
    return d if isinstance(d, int) else d.evaluate(dims, exact)


# --------------------------------------------------------------------------- entries

ELEMENT_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "uint8": 1, "qtensor": 1}


class TensorSpec:
    """An argument or result of an entry, from the module info: ``name`` ("arg0",
    "result2"), ``label`` (the module client's, with roles), ``dtype`` ("float32",
    "bfloat16", "float16" or "qtensor"), ``shape`` (ints and dim-expression strings; for
    a qtensor its logical shape), ``roles`` ({"te.saved": ..., "te.alias": "input:0",
    ...}), ``inner`` ([(name, dtype, shape)] of a qtensor), ``alignment``, and
    ``optional_grad``."""

    def __init__(self, entry, handle, index, is_arg, info):
        L = entry.library._L
        self.entry, self.handle, self.index, self.is_arg = entry, handle, index, is_arg
        self.name = ("arg" if is_arg else "result") + str(index)
        self.label = L.te_module_tensor_label(handle).decode()
        self.dtype = L.te_module_tensor_dtype(handle).decode()
        self.shape = [d if isinstance(d, int) else str(d) for d in info.get("shape", [])]
        self.roles = {}
        for r, key in enumerate(_abi.ROLE_KEYS):
            v = L.te_module_tensor_role(handle, r)
            if v is not None:
                self.roles[key] = v.decode()
        self.optional_grad = bool(info.get("te.optional_grad", False))
        # the entry places intermediates in its buffer when the caller donates it
        # (Entry.run(donated=...)): a backward's saved forward intermediate
        self.donatable = bool(L.te_module_tensor_donatable(handle))
        self.info = info
        self.alignment = L.te_module_tensor_alignment(handle)
        self.inner = []
        for k in range(L.te_module_tensor_num_inner(handle)):
            rank = L.te_module_tensor_inner_rank(handle, k)
            shape = []
            for d in range(rank):
                t = L.te_module_tensor_inner_dim(handle, k, d).decode()
                shape.append(int(t) if re.fullmatch(r"-?\d+", t) else t)
            self.inner.append((L.te_module_tensor_inner_name(handle, k).decode(),
                               L.te_module_tensor_inner_dtype(handle, k).decode(), shape))
        v = ctypes.c_float()
        self.initial_state = (v.value if L.te_module_tensor_initial_state(handle, ctypes.byref(v))
                              == 0 else None)
        # parse every expression now (a malformed one fails at load, not at a call)
        for d in self.shape:
            parse_dim(d)
        for _, _, s in self.inner:
            for d in s:
                parse_dim(d)

    def role(self, key, default=None):
        return self.roles.get(key, default)

    @property
    def is_state(self):
        return "te.state" in self.roles

    @property
    def is_saved(self):
        return "te.saved" in self.roles

    @property
    def is_qtensor(self):
        return self.dtype == "qtensor"

    def shape_at(self, dims, exact=None):
        """The shape (ints or SymInts) at `dims`."""
        return [eval_dim(d, dims, exact) for d in self.shape]

    def bytes_at(self, dims, exact=None):
        """Buffer bytes at `dims`: elements times element size; for a qtensor the sum of
        its inner tensors, each padded to the alignment (TEModule.h)."""
        if not self.is_qtensor:
            n = ELEMENT_BYTES[self.dtype]
            for d in self.shape_at(dims, exact):
                n = n * d
            return n
        a = self.alignment
        total = 0
        for _, dt, shape in self.inner:
            n = ELEMENT_BYTES[dt]
            for d in shape:
                n = n * eval_dim(d, dims, exact)
            total = total + (n + a - 1) // a * a
        return total

    def client_shape(self, dims):
        """The module client's shape at `dims` (te_module_tensor_shape)."""
        L = self.entry.library._L
        out = i64s([0] * len(self.shape))
        self.entry.library._rt.check(L.te_module_tensor_shape(self.handle, i64s(dims), out),
                                     f"{self.entry.name} {self.name}")
        return list(out)[:len(self.shape)]

    def client_bytes(self, dims):
        """The module client's buffer bytes at `dims` (te_module_tensor_bytes)."""
        L = self.entry.library._L
        n = ctypes.c_int64()
        self.entry.library._rt.check(L.te_module_tensor_bytes(self.handle, i64s(dims),
                                                              ctypes.byref(n)),
                                     f"{self.entry.name} {self.name}")
        return n.value

    def client_layout(self, dims):
        """A qtensor's inner tensors in its buffer at `dims`: [(name, offset, bytes)]
        (te_module_tensor_inner_layout)."""
        L = self.entry.library._L
        out = []
        for k, (name, _, _) in enumerate(self.inner):
            o, b = ctypes.c_int64(), ctypes.c_int64()
            self.entry.library._rt.check(L.te_module_tensor_inner_layout(
                self.handle, k, i64s(dims), ctypes.byref(o), ctypes.byref(b)),
                f"{self.entry.name} {self.name}")
            out.append((name, o.value, b.value))
        return out

    def padding(self, dims):
        """The byte ranges [(start, end)] of a qtensor's buffer that no inner tensor
        covers (alignment padding), at `dims`; cached per dims."""
        key = tuple(dims)
        cache = self.__dict__.setdefault("_padding", {})
        if key not in cache:
            total = self.client_bytes(dims)
            gaps, pos = [], 0
            for _, o, b in sorted(self.client_layout(dims), key=lambda t: t[1]):
                if o > pos:
                    gaps.append((pos, o))
                pos = max(pos, o + b)
            if pos < total:
                gaps.append((pos, total))
            cache[key] = gaps
        return cache[key]

    def __repr__(self):
        return f"<{self.entry.name} {self.label}: {self.dtype} {self.shape}>"


class Entry:
    """An entry point: ``name``, ``args``/``results`` (TensorSpec lists), ``num_dims``,
    ``dim_sources`` ([(arg index, dim)] binding d0, d1, ...), ``checks`` ([(DimExpr,
    multiple, message)]: the recipe's alignment rules expr % multiple == 0 the entry checks
    on call: the module info's ``checks``, or in libraries older than it the rules read
    from the entry's check messages),
    ``forward_of`` / ``backward_of`` / ``cached_forward_of``, ``arena`` ("dynamic" or an
    int)."""

    def __init__(self, library, handle, info):
        L = library._L
        self.library, self.handle, self.info = library, handle, info
        self.name = L.te_module_entry_name(handle).decode()
        self.symbol = L.te_module_entry_symbol(handle).decode()
        self.num_dims = L.te_module_entry_num_dims(handle)
        self.dim_sources = [(int(d["arg"]), int(d["dim"])) for d in info.get("dims", [])]
        self.forward_of = info.get("te.forward_of")
        self.backward_of = info.get("te.backward_of")
        self.cached_forward_of = info.get("te.cached_forward_of")
        self.arena = info.get("arena_bytes")
        # the arena with every donatable argument donated (None: none is donatable)
        self.arena_donated = info.get("arena_bytes_donated")
        self.args = [TensorSpec(self, L.te_module_entry_arg(handle, i), i, True, a)
                     for i, a in enumerate(info.get("args", []))]
        self.results = [TensorSpec(self, L.te_module_entry_result(handle, i), i, False, r)
                        for i, r in enumerate(info.get("results", []))]
        self.donatable = [a.index for a in self.args if a.donatable]
        # te.main_grad_of results (main_grad + a weight's gradient, fp32) written into
        # their main_grad argument's buffer: result index -> argument index. The op
        # takes that argument mutated (Tensor(a!)) and does not return the result;
        # ``returned`` lists the results it returns, in order.
        main_args = {a.role("te.main_grad_of"): a.index for a in self.args
                     if a.role("te.main_grad_of") is not None}
        self.in_place = {}
        for r in self.results:
            of = r.role("te.main_grad_of")
            if of is not None:
                if of not in main_args or self.args[main_args[of]].dtype != r.dtype or \
                        self.args[main_args[of]].shape != r.shape:
                    raise TeMlirError(f"{library.path}: entry {self.name}: result {r.label} "
                                      f"has no main_grad argument of its type ({of})")
                self.in_place[r.index] = main_args[of]
        # A backward's new recipe state written over its state argument (module info
        # state_in_place, te-compile's promise that nothing reads the old state after):
        # the op mutates the state it is given, and nothing copies the new state back.
        for r in self.results:
            a = L.te_module_entry_result_state_in_place(handle, r.index)
            if a >= 0 and r.index not in self.in_place:
                self.in_place[r.index] = a
        self.returned = [r.index for r in self.results if r.index not in self.in_place]
        if len(self.args) != L.te_module_entry_num_args(handle) or \
                len(self.results) != L.te_module_entry_num_results(handle):
            raise TeMlirError(f"{library.path}: entry {self.name}: the module info and the "
                              "module client disagree on its arguments")
        if "checks" in info:
            self.checks = [(parse_dim(c["expr"]), int(c["multiple"]), str(c["message"]))
                           for c in info["checks"]]
        else:
            self.checks = [(parse_dim(f"d{k}"), m, f"{self.name}: recipe {library.recipe} "
                            f"needs d{k} % {m} == 0")
                           for k, m in library._checks.get(self.name, [])]
        # where each symbol can be read off an argument's size: the module info's source,
        # unless that is a quantized buffer (1-D bytes), then a typed argument with the
        # bare symbol at some dim (the fake impls read sizes from these)
        self.size_sources = []
        for k in range(self.num_dims):
            src = self.dim_sources[k] if k < len(self.dim_sources) else None
            if src is None or self.args[src[0]].is_qtensor:
                src = next(((a.index, j) for a in self.args if not a.is_qtensor
                            for j, d in enumerate(a.shape) if d == f"d{k}"), None)
            self.size_sources.append(src)
        # A dim only quantized arguments carry (te-split-wgrad's <fn>_bwd_wgrad of an
        # FP8 step): the caller gives the dims (the PyTorch op's trailing int[] dims).
        self.takes_dims = any(src is None for src in self.size_sources)

    def state_result(self, arg_index):
        """The result returning the new value of state argument `arg_index`, or None."""
        r = self.library._L.te_module_entry_state_result(self.handle, arg_index)
        return None if r < 0 else r

    def bind_dims(self, dtypes, shapes):
        """The dims d0.. from the arguments' dtypes (strings; None: unchecked) and shapes
        (int lists; None: a qtensor's raw bytes, not checked here). Raises TeMlirError
        naming the argument (te_module_bind_dims' message)."""
        L = self.library._L
        n = len(self.args)
        if len(shapes) != n:
            raise TeMlirError(f"{self.name}: expected {n} arguments, got {len(shapes)}")
        dt = (ctypes.c_char_p * max(1, n))(*[d.encode() if d else None for d in dtypes])
        arrs = [i64s(list(s)) if s is not None else None for s in shapes]
        sp = (ctypes.POINTER(ctypes.c_int64) * max(1, n))(
            *[ctypes.cast(a, ctypes.POINTER(ctypes.c_int64)) if a is not None else None
              for a in arrs])
        ranks = i64s([len(s) if s is not None else -1 for s in shapes])
        dims = i64s([0] * self.num_dims)
        rc = L.te_module_bind_dims(self.handle, dt, sp, ranks, dims)
        if rc != 0:
            raise TeMlirError(self.library._rt.error())
        return list(dims)[:self.num_dims]

    def check_dims(self, dims):
        """The recipe's alignment rules at `dims` (what the entry checks on call)."""
        for expr, m, message in self.checks:
            v = expr if isinstance(expr, int) else expr.evaluate(dims)
            if v % m != 0:
                raise TeMlirError(f"{message}, got {v}")

    def arena_bytes(self, dims, donated=None):
        """The arena the entry needs at `dims`; None when the library cannot say (a
        "dynamic" entry of a library older than the module info's arena_symbol, which
        sizes its arena itself). ``donated``: the indices of the arguments the caller
        donates (te_module_entry_arena_bytes_donated)."""
        n = ctypes.c_int64()
        L = self.library._L
        if donated:
            rc = L.te_module_entry_arena_bytes_donated(
                self.handle, i64s(dims), self._flags(donated), ctypes.byref(n))
        else:
            rc = L.te_module_entry_arena_bytes(self.handle, i64s(dims), ctypes.byref(n))
        self.library._rt.check(rc, f"{self.name}: arena bytes")
        return None if n.value < 0 else n.value

    def results_bytes(self, dims):
        """The bytes of the entry's result buffers at `dims` (te_module_tensor_bytes); an
        in-place result (te.main_grad_of: its main_grad argument's buffer) takes none."""
        return sum(r.client_bytes(dims) for r in self.results if r.index not in self.in_place)

    def peak_bytes(self, dims, donated=None):
        """The plan's peak of a call at `dims`: what it holds above its arguments, its
        results' buffers and its arena (donated: as arena_bytes); None when the arena
        cannot be said. Intermediates the plan lends a result's buffer before the
        result is written take nothing more."""
        arena = self.arena_bytes(dims, donated)
        return None if arena is None else self.results_bytes(dims) + arena

    def _flags(self, donated):
        """The uint8 flag per argument of te_module_run_donated."""
        flags = (ctypes.c_uint8 * max(1, len(self.args)))()
        for i in donated:
            flags[i] = 1
        return flags

    def run(self, ctx, args, results, dims, donated=None):
        """te_module_run on context `ctx` (queued on its stream, no synchronization) with
        buffer addresses `args` / `results` (int lists, or arrays of _abi.addresses) at
        `dims` (an int list or an _abi.i64s array; a caller timing the host side builds
        the arrays once). ``donated``: the indices of donatable arguments whose buffers the
        entry may overwrite (te_module_run_donated; size the arena with
        ``arena_bytes(dims, donated)``)."""
        L = self.library._L
        if donated:
            rc = L.te_module_run_donated(self.handle, ctx.handle, _addresses(args),
                                         _addresses(results), _int64s(dims),
                                         self._flags(donated))
        else:
            rc = L.te_module_run(self.handle, ctx.handle, _addresses(args),
                                 _addresses(results), _int64s(dims))
        if rc != 0:
            raise TeMlirError(self.library._rt.error())

    def __repr__(self):
        return f"<Entry {self.name}: {len(self.args)} args, {len(self.results)} results>"


def _addresses(values):
    return values if isinstance(values, ctypes.Array) else _abi.addresses(values)


def _int64s(values):
    return values if isinstance(values, ctypes.Array) else i64s(values)


class Step:
    """A training step of a library (te_module_step_*): ``name``, ``fwd`` and ``bwd``
    (its Entries), ``feeds`` ([(kind, index)] per backward argument, as
    Library.feeds), ``wgrad`` (te-split-wgrad's deferred weight gradients' Entry, or
    None) with ``wgrad_feeds`` (FEED_STASH: a backward result). ``run`` runs the
    forward then the backward in one call."""

    def __init__(self, library, name=None):
        L, rt = library._L, library._rt
        self.library = library
        self.handle = ctypes.c_void_p()
        rt.check(L.te_module_step_create(library._mod, name.encode() if name else None,
                                         ctypes.byref(self.handle)),
                 f"{library.path.name}: step {name or '(the one pair)'}")
        self.fwd = library.entry(L.te_module_entry_name(L.te_module_step_fwd(self.handle))
                                 .decode())
        self.bwd = library.entry(L.te_module_entry_name(L.te_module_step_bwd(self.handle))
                                 .decode())
        self.name = self.fwd.forward_of or self.fwd.name
        self.feeds = []
        for i in range(len(self.bwd.args)):
            kind, idx = ctypes.c_int32(), ctypes.c_int64()
            rt.check(L.te_module_step_feed(self.handle, i, ctypes.byref(kind), ctypes.byref(idx)),
                     f"{self.bwd.name}: feed of arg{i}")
            self.feeds.append((kind.value, idx.value))
        w = L.te_module_step_wgrad(self.handle)
        self.wgrad = library.entry(L.te_module_entry_name(w).decode()) if w else None
        self.wgrad_feeds = []
        for i in range(len(self.wgrad.args) if self.wgrad else 0):
            kind, idx = ctypes.c_int32(), ctypes.c_int64()
            rt.check(L.te_module_step_wgrad_feed(self.handle, i, ctypes.byref(kind),
                                                 ctypes.byref(idx)),
                     f"{self.wgrad.name}: feed of arg{i}")
            self.wgrad_feeds.append((kind.value, idx.value))

    def wgrad_dims(self, fwd_dims):
        """The wgrad entry's dims from the forward's (te_module_step_wgrad_dims: what
        feeds it, a stash at the backward's dims)."""
        out = i64s([0] * max(1, self.wgrad.num_dims))
        self.library._rt.check(self.library._L.te_module_step_wgrad_dims(
            self.handle, i64s(fwd_dims), out), f"{self.wgrad.name}: dims")
        return list(out)[:self.wgrad.num_dims]

    def bwd_dims(self, fwd_dims):
        """The backward's dims from the forward's (te_module_step_bwd_dims)."""
        out = i64s([0] * self.bwd.num_dims)
        self.library._rt.check(self.library._L.te_module_step_bwd_dims(
            self.handle, i64s(fwd_dims), out), f"{self.bwd.name}: dims")
        return list(out)[:self.bwd.num_dims]

    def run(self, ctx, fwd_args, fwd_results, grads, bwd_args, bwd_results, fwd_dims):
        """te_module_step_run on `ctx`: the forward, then the backward with its arguments fed
        from the forward's (`bwd_args` is filled in; recipe-state arguments stay as given).
        Buffers as Entry.run takes them; `grads` per forward result (None where the
        backward takes none). Queued on the context's stream, no synchronization."""
        if not isinstance(bwd_args, ctypes.Array):
            bwd_args = _abi.addresses(bwd_args)
        rc = self.library._L.te_module_step_run(
            self.handle, ctx.handle, _addresses(fwd_args), _addresses(fwd_results),
            _addresses(grads), bwd_args, _addresses(bwd_results), _int64s(fwd_dims))
        if rc != 0:
            raise TeMlirError(self.library._rt.error())

    def __del__(self):
        try:
            if self.handle:
                self.library._L.te_module_step_destroy(self.handle)
        except Exception:
            pass


_CHECK_RE = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*): recipe ([A-Za-z0-9_.-]+) needs d(\d+) % "
                       rb"(\d+) == 0")


class Library:
    """A te-compile'd library. ``path``, ``sha256`` (of the file), ``info`` (the parsed
    te_module_info() JSON), ``entries`` (name -> Entry, in the module info's order),
    ``backend`` ("cpu" or "cuda": what runs it; "auto" resolves to the library's target,
    then te_rt_select_backend, $TE_RT_BACKEND overriding), ``target``, ``recipe`` (from
    the alignment rules found, else None), ``steps`` (training-step name -> (fwd, bwd)
    entry names).

    ``sha256=`` given: the file must have that digest (else TeMlirError, before dlopen)."""

    def __init__(self, path, backend="auto", sha256=None):
        self._rt = _abi.runtime()
        self._L = self._rt.lib
        self.path = Path(path).resolve()
        try:
            data = self.path.read_bytes()
        except OSError as ex:
            raise TeMlirError(f"te-mlir: cannot read library {path}: {ex}") from None
        self.sha256 = hashlib.sha256(data).hexdigest()
        if sha256 is not None and sha256.lower() != self.sha256:
            raise TeMlirError(f"te-mlir: library {self.path} has sha256 {self.sha256}, expected "
                              f"{sha256.lower()} (rebuilt or replaced since it was recorded)")
        self._checks = {}
        recipes = set()
        for m in _CHECK_RE.finditer(data):
            name = m.group(1).decode()
            rule = (int(m.group(3)), int(m.group(4)))
            if rule not in self._checks.setdefault(name, []):
                self._checks[name].append(rule)
            recipes.add(m.group(2).decode())
        self.recipe = ",".join(sorted(recipes)) or None
        self._mod = ctypes.c_void_p()
        rc = self._L.te_module_open(str(self.path).encode(), ctypes.byref(self._mod))
        if rc != 0:
            raise TeMlirError(f"te-mlir: cannot open library {self.path}: {self._rt.error()}")
        text = self._L.te_module_info_text(self._mod).decode()
        self.info = json.loads(text)
        self.target = self.info.get("target")
        by_name = {e["name"]: e for e in self.info.get("entries", [])}
        self.entries = {}
        for i in range(self._L.te_module_num_entries(self._mod)):
            h = self._L.te_module_entry_at(self._mod, i)
            name = self._L.te_module_entry_name(h).decode()
            self.entries[name] = Entry(self, h, by_name[name])
        self.steps = {}
        for e in self.entries.values():
            if e.backward_of is not None:
                fwd = next((f.name for f in self.entries.values()
                            if f.forward_of == e.backward_of), None)
                if fwd is not None:
                    self.steps[e.backward_of] = (fwd, e.name)
        want = backend
        if want == "auto" and self.target in ("cpu", "cuda"):
            want = self.target
        self.backend = self._rt.select_backend(want)

    def entry(self, name):
        try:
            return self.entries[name]
        except KeyError:
            raise TeMlirError(f"{self.path.name}: no entry {name!r}; it has "
                              + ", ".join(self.entries)) from None

    def feeds(self, step):
        """[(kind, index)] per backward argument of training step `step`
        (te_module_step_feed: FEED_INPUT forward arg, FEED_RESULT forward result,
        FEED_GRAD the gradient of forward result `index`, FEED_STATE recipe state,
        FEED_MAIN_GRAD the fp32 main_grad of forward argument `index`)."""
        return self.step(step).feeds

    def step(self, name=None):
        """The training step `name` (<name>_fwd and <name>_bwd; None: the library's one
        linked pair) as a Step."""
        return Step(self, name)

    def context(self, device_index=0):
        return self._rt.context(self.backend, device_index)

    def __repr__(self):
        return f"<te_mlir.Library {self.path.name} sha256={self.sha256[:12]} {self.backend}: " \
               + ", ".join(self.entries) + ">"

    def __del__(self):
        # modules stay open for the process (custom ops may still point at them)
        pass
