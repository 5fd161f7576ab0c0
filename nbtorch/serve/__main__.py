"""``python -m nbtorch.serve MODEL_PATH [...]``: serve models over HTTP with uvicorn.

Each MODEL_PATH is ``[NAME[@VERSION]=]PATH`` (name: the file's stem; version: 1);
``.onnx`` files run on onnxruntime (``--runtime nbtorch`` runs them on nbtorch's
kernels), other files are ``nbtorch.jit.save``d traced graphs. ``--workers N`` starts N
server processes on the port (uvicorn's supervisor), ``--threads T`` inference threads
in each.
"""
import argparse
import json
import logging
import os
import sys

__all__ = ["main", "serve", "parse_model_arg", "app_factory"]


def parse_model_arg(text):
    """'name@2=path' -> (name, version, path); 'path' -> (None, '1', path)."""
    if "=" in text:
        head, path = text.split("=", 1)
        name, _, version = head.partition("@")
        return name or None, version or "1", path
    return None, "1", text


_CONFIG_ENV = "NBTORCH_SERVE_CONFIG"


def serve(models, host="127.0.0.1", port=8080, max_batch_size=32, max_delay_ms=5.0,
          threads=1, max_body_bytes=16 << 20, request_timeout_s=30.0, log_level="info",
          graceful_timeout_s=30):
    """Run uvicorn on `models` (ServedModels) in this process until SIGINT/SIGTERM;
    in-flight requests finish first."""
    import uvicorn
    from . import create_app
    app = create_app(models, max_batch_size=max_batch_size, max_delay_ms=max_delay_ms,
                     workers=threads, max_body_bytes=max_body_bytes,
                     request_timeout_s=request_timeout_s)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level,
                            timeout_graceful_shutdown=graceful_timeout_s,
                            timeout_keep_alive=5, limit_concurrency=1024)
    uvicorn.Server(config).run()


def app_factory():
    """The app of one worker process (``--workers N``): models and settings come from the
    parent through an environment variable (paths and numbers only)."""
    from . import create_app
    from ._models import load_model
    cfg = json.loads(os.environ[_CONFIG_ENV])
    models = [load_model(path, name, version, cfg["runtime"], cfg["threads"])
              for name, version, path in cfg["models"]]
    return create_app(models, max_batch_size=cfg["max_batch_size"],
                      max_delay_ms=cfg["max_delay_ms"], workers=cfg["threads"],
                      max_body_bytes=cfg["max_body_bytes"],
                      request_timeout_s=cfg["timeout_s"])


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m nbtorch.serve", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", metavar="MODEL_PATH")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--max-batch-size", type=int, default=32)
    p.add_argument("--max-delay-ms", type=float, default=5.0)
    p.add_argument("--workers", type=int, default=1,
                   help="server processes (each loads the models; metrics are per process)")
    p.add_argument("--threads", type=int, default=1, help="inference threads per process")
    p.add_argument("--max-body-bytes", type=int, default=16 << 20)
    p.add_argument("--timeout-s", type=float, default=30.0, help="per-request limit")
    p.add_argument("--runtime", choices=["auto", "onnxruntime", "nbtorch"], default="auto")
    p.add_argument("--log-level", default="info")
    args = p.parse_args(argv)
    from . import _require
    _require()
    from ._models import load_model
    logging.basicConfig(level=args.log_level.upper())
    models, specs = [], []
    for text in args.models:
        name, version, path = parse_model_arg(text)
        try:
            models.append(load_model(path, name, version, args.runtime, args.threads))
        except (OSError, ValueError, ImportError) as exc:
            print(f"nbtorch.serve: cannot load {path}: {exc}", file=sys.stderr)
            return 2
        specs.append((models[-1].name, version, os.path.abspath(path)))
    if args.workers > 1:
        import uvicorn
        os.environ[_CONFIG_ENV] = json.dumps({
            "models": specs, "runtime": args.runtime, "threads": args.threads,
            "max_batch_size": args.max_batch_size, "max_delay_ms": args.max_delay_ms,
            "max_body_bytes": args.max_body_bytes, "timeout_s": args.timeout_s})
        uvicorn.run("nbtorch.serve.__main__:app_factory", factory=True, host=args.host,
                    port=args.port, workers=args.workers, log_level=args.log_level,
                    timeout_graceful_shutdown=30, timeout_keep_alive=5)
        return 0
    serve(models, args.host, args.port, args.max_batch_size, args.max_delay_ms,
          args.threads, args.max_body_bytes, args.timeout_s, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
