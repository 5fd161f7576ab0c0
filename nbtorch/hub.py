"""`torch.hub`, without the network: nbtorch downloads nothing.

What works: models from a local directory holding a ``hubconf.py`` (``source='local'``,
as PyTorch's), and ``load_state_dict_from_url`` when the file is already in the hub's
checkpoint folder (PyTorch's own cache, ``$TORCH_HOME/hub/checkpoints``, so weights a
PyTorch installation downloaded are found). Anything that would download raises a
RuntimeError that says where to put the file.

Example:
    >>> sd = nbtorch.hub.load_state_dict_from_url("https://host/resnet18-f37072fd.pth")
    RuntimeError: nbtorch.hub cannot download anything ... place it at ~/.cache/torch/hub/...
"""
import importlib.util
import os
import sys
from urllib.parse import urlparse

__all__ = ["load", "list", "help", "load_state_dict_from_url", "download_url_to_file",
           "get_dir", "set_dir"]

_DIR = [None]


def get_dir():
    """The hub folder: set_dir's, else $TORCH_HOME/hub, else $XDG_CACHE_HOME/torch/hub
    (~/.cache/torch/hub), as PyTorch chooses."""
    if _DIR[0] is not None:
        return _DIR[0]
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d):
    _DIR[0] = os.path.expanduser(os.fspath(d))


def _no_download(what, where=None):
    msg = f"nbtorch.hub cannot download anything (nbtorch never uses the network): {what}."
    if where:
        msg += f" Download it yourself and place it at {where}"
    raise RuntimeError(msg)


def _hubconf(repo_or_dir, source):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        _no_download(f"the GitHub repository {repo_or_dir!r}",
                     "a folder of your own and call hub.load(folder, ..., source='local')")
    path = os.path.join(repo_or_dir, "hubconf.py")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"Cannot find hubconf.py in {repo_or_dir}")
    sys.path.insert(0, repo_or_dir)
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_or_dir)
    return module


def _entry(module, model):
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True,
         source="github"):
    """The entry points of a local ``hubconf.py`` (``source='local'``)."""
    module = _hubconf(github, source)
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None,
         source="github"):
    return _entry(_hubconf(github, source), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """``hubconf.<model>(*args, **kwargs)`` from a local directory (``source='local'``)."""
    return _entry(_hubconf(repo_or_dir, source), model)(*args, **kwargs)


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    _no_download(url, dst)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """`nbtorch.load` of the file `url` names, if it is already in `model_dir` (default:
    ``get_dir()/checkpoints``); otherwise a RuntimeError saying where to put it."""
    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    path = os.path.join(model_dir, file_name or os.path.basename(urlparse(url).path))
    if not os.path.isfile(path):
        _no_download(url, path)
    from .serialization import load as _load
    return _load(path, map_location=map_location)
