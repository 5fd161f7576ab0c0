"""The starlette app: routes, request parsing (JSON, .npy, safetensors), size limits,
errors as JSON, metrics. Requests are parsed as data only (``allow_pickle=False``)."""
import asyncio
import contextlib
import io
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ._batching import Batcher
from ._metrics import Metrics
from ._models import BadInput

__all__ = ["create_app", "HTTPError"]

log = logging.getLogger("nbtorch.serve")


class HTTPError(Exception):
    """An error answered with `status` and a JSON body {"error": message}."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _version_key(v):
    return (0, int(v), "") if str(v).isdigit() else (1, 0, str(v))


class Registry:
    """Models by name and version; the highest version answers unversioned requests."""

    def __init__(self, models):
        self.models = {}
        for m in models:
            self.models.setdefault(m.name, {})[m.version] = m

    def get(self, name, version=None):
        versions = self.models.get(name)
        if not versions:
            raise HTTPError(404, f"unknown model '{name}' (have: "
                                 f"{', '.join(sorted(self.models)) or 'none'})")
        if version is None:
            version = max(versions, key=_version_key)
        m = versions.get(str(version))
        if m is None:
            raise HTTPError(404, f"model '{name}' has no version '{version}' (have: "
                                 f"{', '.join(sorted(versions, key=_version_key))})")
        return m

    def all(self):
        return [m for versions in self.models.values() for m in versions.values()]


async def _body(request, limit):
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise HTTPError(400, "bad Content-Length header") from None
        if size > limit:
            raise HTTPError(413, f"request body of {size} bytes is over the limit of "
                                 f"{limit} bytes")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise HTTPError(413, f"request body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _json_inputs(data, model):
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise HTTPError(400, f"malformed JSON: {str(exc)[:200]}") from None
    if not isinstance(doc, dict) or "inputs" not in doc:
        raise HTTPError(400, 'JSON body must be an object with "inputs"')
    inputs = doc["inputs"]
    names = [i.name for i in model.inputs]
    if isinstance(inputs, dict):
        missing = [n for n in names if n not in inputs]
        if missing:
            raise HTTPError(400, f"missing input(s) {missing} (model inputs: {names})")
        values = [inputs[n] for n in names]
    elif len(names) == 1:
        values = [inputs]
    else:
        if not isinstance(inputs, list) or len(inputs) != len(names):
            raise HTTPError(400, f"model takes {len(names)} inputs {names}: send a list of "
                                 "that many arrays or an object by name")
        values = inputs
    arrays = []
    for spec, v in zip(model.inputs, values):
        try:
            arr = np.asarray(v, dtype=spec.dtype if spec.dtype is not None else np.float32)
        except (ValueError, TypeError, RecursionError, OverflowError) as exc:
            raise HTTPError(400, f"input '{spec.name}' is not a rectangular array of "
                                 f"numbers: {str(exc)[:200]}") from None
        arrays.append(arr)
    return arrays


def _npy_inputs(data, model):
    if len(model.inputs) != 1:
        raise HTTPError(400, "an .npy body holds one array: use safetensors or JSON for "
                             f"{len(model.inputs)} inputs")
    try:
        return [np.load(io.BytesIO(data), allow_pickle=False)]
    except (ValueError, OSError, EOFError) as exc:
        raise HTTPError(400, f"malformed .npy body: {exc}") from None


def _safetensors_inputs(data, model):
    try:
        from safetensors.numpy import load
        tensors = load(data)
    except ImportError:
        raise HTTPError(415, "safetensors bodies need the safetensors package") from None
    except Exception as exc:                     # noqa: BLE001 - any parse failure is a 400
        raise HTTPError(400, f"malformed safetensors body: {exc}") from None
    names = [i.name for i in model.inputs]
    missing = [n for n in names if n not in tensors]
    if missing:
        raise HTTPError(400, f"missing input(s) {missing} (model inputs: {names})")
    return [tensors[n] for n in names]


def _parse(data, content_type, model):
    ct = (content_type or "application/json").split(";")[0].strip().lower()
    if ct in ("application/json", "text/json"):
        arrays = _json_inputs(data, model)
    elif ct in ("application/x-npy", "application/npy"):
        arrays = _npy_inputs(data, model)
    elif ct in ("application/x-safetensors", "application/safetensors",
                "application/octet-stream"):
        arrays = _safetensors_inputs(data, model)
    else:
        raise HTTPError(415, f"unsupported Content-Type '{ct}' (use application/json, "
                             "application/x-npy or application/x-safetensors)")
    try:
        arrays = [spec.check(a) for spec, a in zip(model.inputs, arrays)]
    except BadInput as exc:
        raise HTTPError(400, str(exc)) from None
    if model.batchable and any(a.ndim == 0 for a in arrays):
        raise HTTPError(400, "inputs need a batch axis (axis 0)")
    if model.batchable and len({a.shape[0] for a in arrays}) > 1:
        raise HTTPError(400, "inputs disagree in batch size (axis 0)")
    return arrays


def _response(model, outs, accept):
    if accept and "application/x-npy" in accept and len(outs) == 1:
        buf = io.BytesIO()
        np.save(buf, outs[0], allow_pickle=False)
        return Response(buf.getvalue(), media_type="application/x-npy")
    names = model.output_names if len(model.output_names) == len(outs) else \
        [f"output_{i}" for i in range(len(outs))]
    payload = outs[0].tolist() if len(outs) == 1 else \
        {n: o.tolist() for n, o in zip(names, outs)}
    return JSONResponse({"model": model.name, "version": model.version, "outputs": payload})


def create_app(models, max_batch_size=32, max_delay_ms=5.0, workers=1,
               max_body_bytes=16 << 20, request_timeout_s=30.0):
    """An ASGI app serving `models` (ServedModels) with dynamic batching on `workers`
    inference threads."""
    registry = Registry(models)
    metrics = Metrics()
    executor = ThreadPoolExecutor(max_workers=max(1, int(workers)),
                                  thread_name_prefix="nbtorch-serve")
    batchers = {(m.name, m.version): Batcher(m, executor, metrics, max_batch_size,
                                             max_delay_ms / 1000.0) for m in registry.all()}
    state = {"ready": False}

    async def predict(request):
        start = time.perf_counter()
        name = request.path_params["name"]
        version = request.path_params.get("version")
        label = "_unknown"           # unknown names stay out of the metric labels
        try:
            model = registry.get(name, version)
            label = model.name
            data = await _body(request, max_body_bytes)
            arrays = _parse(data, request.headers.get("content-type"), model)
            try:
                outs = await asyncio.wait_for(
                    batchers[(model.name, model.version)].submit(arrays), request_timeout_s)
            except asyncio.TimeoutError:
                raise HTTPError(504, f"inference took over {request_timeout_s} s") from None
            except HTTPError:
                raise
            except Exception as exc:                 # noqa: BLE001 - the model raised
                log.exception("model %s raised", model.name)
                metrics.error(label, "model")
                raise HTTPError(500, f"the model raised {type(exc).__name__}: {exc}") \
                    from None
            response = _response(model, outs, request.headers.get("accept"))
            metrics.request(label, 200, time.perf_counter() - start)
            return response
        except HTTPError as exc:
            if exc.status < 500:
                metrics.error(label, "bad_request" if exc.status != 404 else "not_found")
            metrics.request(label, exc.status, time.perf_counter() - start)
            return JSONResponse({"error": str(exc)}, status_code=exc.status)

    async def health(request):
        return JSONResponse({"status": "ok"})

    async def ready(request):
        if not state["ready"]:
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ready",
                             "models": sorted({m.name for m in registry.all()})})

    async def list_models(request):
        return JSONResponse({"models": [m.describe() for m in registry.all()]})

    async def metrics_text(request):
        return PlainTextResponse(metrics.render(),
                                 media_type="text/plain; version=0.0.4; charset=utf-8")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        state["ready"] = True
        yield
        state["ready"] = False
        for b in batchers.values():
            await b.close()
        executor.shutdown(wait=True)

    routes = [Route("/health", health), Route("/ready", ready),
              Route("/metrics", metrics_text), Route("/v1/models", list_models),
              Route("/v1/models/{name}:predict", predict, methods=["POST"]),
              Route("/v1/models/{name}/versions/{version}:predict", predict,
                    methods=["POST"])]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.metrics = metrics
    app.state.registry = registry
    return app
