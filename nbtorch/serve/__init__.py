"""nbtorch.serve: an HTTP model server for traced (``nbtorch.jit.save``) and ONNX models.

Run ``python -m nbtorch.serve MODEL_PATH [--port 8080 --max-batch-size 32
--max-delay-ms 5 --workers N --threads T]``. Built on uvicorn + starlette (the optional
``serve`` extra): ``POST /v1/models/{name}:predict`` (JSON arrays, ``.npy`` or
safetensors bytes), ``GET /health``, ``/ready``, ``/metrics`` (Prometheus text),
several models and versions, dynamic batching, inference on worker threads
(Numba kernels and onnxruntime release the GIL), graceful shutdown. Requests
are data only: nothing in them is ever evaluated or unpickled.
"""

__all__ = ["create_app", "load_model", "ServedModel", "run"]


def _require():
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ImportError("nbtorch.serve needs uvicorn and starlette: "
                          "pip install 'nbtorch[serve]'") from exc


def create_app(models, **kwargs):
    """The ASGI app serving `models` (see `nbtorch.serve.app.create_app`)."""
    _require()
    from .app import create_app as _create
    return _create(models, **kwargs)


def load_model(path, name=None, version="1", runtime="auto"):
    """A `ServedModel` from an ONNX file or a ``nbtorch.jit.save``d graph."""
    from ._models import load_model as _load
    return _load(path, name, version, runtime)


def run(models, host="127.0.0.1", port=8080, **kwargs):
    """Serve `models` with uvicorn until interrupted (see ``python -m nbtorch.serve``)."""
    from .__main__ import serve
    return serve(models, host=host, port=port, **kwargs)


def __getattr__(name):
    if name == "ServedModel":
        from ._models import ServedModel
        return ServedModel
    raise AttributeError(f"module 'nbtorch.serve' has no attribute '{name}'")
