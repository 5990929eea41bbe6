"""cpu mode: lets TransformerEngine's tests, written for a GPU, run on the CPU. A
TorchFunctionMode maps every "cuda" device argument (factory functions, Tensor.to,
Tensor.cuda) to "cpu", torch.autocast(device_type="cuda") becomes the CPU's autocast,
and the few torch.cuda calls the selected tests make (synchronize, the RNG state) are
no-ops. Nothing here is active unless install() is called (the plugin does, in cpu mode)."""
import torch
from torch.overrides import TorchFunctionMode

_CPU = torch.device("cpu")


def _is_cuda(d):
    if isinstance(d, torch.device):
        return d.type == "cuda"
    if isinstance(d, str):
        return d == "cuda" or d.startswith("cuda:")
    return False


def map_device(d):
    """`d` with a cuda device replaced by the CPU (None and CPU devices unchanged)."""
    return _CPU if _is_cuda(d) else d


class CudaToCpu(TorchFunctionMode):
    """Every torch function sees the CPU where the caller named a cuda device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.cuda:
            return args[0]
        if "device" in kwargs:
            kwargs = dict(kwargs, device=map_device(kwargs["device"]))
        if func is torch.Tensor.to and any(_is_cuda(a) for a in args[1:]):
            args = (args[0],) + tuple(map_device(a) for a in args[1:])
        return func(*args, **kwargs)


class _Autocast(torch.autocast):
    """torch.autocast with device_type "cuda" read as "cpu"."""

    def __init__(self, device_type, *args, **kwargs):
        super().__init__("cpu" if device_type == "cuda" else device_type, *args, **kwargs)


_MODE = None


def install():
    """Enters the mode for the rest of the process and patches torch.cuda's calls."""
    global _MODE
    if _MODE is not None:
        return
    _MODE = CudaToCpu()
    _MODE.__enter__()
    torch.autocast = _Autocast
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.get_rng_state = lambda device="cuda": torch.get_rng_state()
    torch.cuda.set_rng_state = lambda state, device="cuda": None
    torch.cuda.manual_seed = lambda seed: None
    torch.cuda.manual_seed_all = lambda seed: None
    torch.cuda.current_device = lambda: 0
