"""What counts as PyTorch's public op surface, for the API coverage and differential tests.

`public_names(namespace)` lists a PyTorch namespace's public names; names in
OUT_OF_SCOPE (reviewed, each group with its reason) are left out of the
coverage figures. The list is kept honest by tests/api/test_api_coverage.py:
every entry must exist in PyTorch and must not exist in nbtorch (implementing
one means removing it here).
"""
import fnmatch
import inspect

# Names (fnmatch patterns where a family is large) nbtorch does not aim to provide, by
# namespace. Keep it short: anything a user would call in ordinary model code is in scope.
OUT_OF_SCOPE = {
    "torch": [
        # quantized tensors: the int8 ones are in nbtorch (nbtorch/_qtensor.py, nbtorch.ao);
        # sub-byte dtypes, their storages, ATen's quantized RNN/pool/batch-norm entry points
        # (nbtorch's live in nbtorch.ao.nn.quantized) and fused observers are not
        "quint4x2", "quint2x4", "quantized_*", "choose_qparams_optimized",
        "fused_moving_avg_obs_fake_quant", "QInt*Storage", "QUInt*Storage", "empty_quantized",
        # sparse layouts nbtorch.sparse lacks (it has COO and CSR) and sparse-only products
        "sparse_bsc_tensor", "sparse_bsr_tensor", "sparse_csc_tensor",
        "sparse_compressed_tensor", "*_indices_copy", "values_copy", "indices_copy", "smm",
        "hsmm", "dsmm", "hspmm", "saddmm", "sspaddmm", "resize_as_sparse_",
        "native_norm",        # ATen's norm kernel for sparse tensors (SparseCPU/SparseCUDA only)
        # vendor backends and their entry points
        "mkldnn_*", "cudnn_*", "fbgemm_*", "miopen_*", "is_vulkan_available", "mps", "mtia",
        "xpu", "has_mkl", "has_lapack", "has_openmp", "has_spectral", "backends",
        # sub-byte dtypes (no arithmetic in NumPy/Numba to build kernels on; the float8
        # family and uint16-64 are in, as PyTorch's limited dtypes: nbtorch/_limited.py)
        "bit", "bits*", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1",
        "uint2", "uint3", "uint4", "uint5", "uint6", "uint7", "float4_*",
        "complex32", "chalf",
        # TorchScript's C++ IR, compilation units and its type system
        "AliasDb", "*Type", "Argument", "ArgumentSpec", "CompleteArgumentSpec", "Block",
        "BufferDict", "ModuleDict", "ParameterDict", "CallStack", "Capsule", "Code",
        "CompilationUnit", "ConcreteModuleType*", "DeepCopyMemoTable", "ErrorReport",
        "ExecutionPlan", "FileCheck", "FunctionSchema", "Gradient", "Graph",
        "GraphExecutorState", "IODescriptor", "InferredType", "JITException",
        "LiteScriptModule", "Script*", "StaticModule", "TracingState", "Use", "Value", "Node",
        "import_ir_module*", "parse_ir", "parse_schema", "parse_type_comment",
        "merge_type_from_type_comment", "unify_type_list", "fork", "wait", "Future",
        "ThroughputBenchmark", "BenchmarkConfig", "BenchmarkExecutionStats",
        "LockingLogger", "LoggerBase", "NoopLogger", "AggregationType", "AVG", "SUM",
        "PyTorchFileReader", "PyTorchFileWriter", "SerializationStorageContext",
        "DeserializationStorageContext",
        # the dispatcher (internals of torch.compile / torch.export)
        "DispatchKey", "DispatchKeySet", "ExcludeDispatchKeyGuard", "Tag", "OperatorInfo",
        "DisableTorchFunction*", "PRIVATE_OPS", "classproperty",
        "get_file_path", "classes", "cpp",
        # autocast state of devices other than cpu and cuda
        "get_autocast_ipu_dtype", "get_autocast_xla_dtype", "set_autocast_ipu_*",
        "set_autocast_xla_*", "is_autocast_ipu_enabled", "is_autocast_xla_enabled",
        # build flags of the C++ library
        "USE_GLOBAL_DEPS", "USE_RTLD_GLOBAL_WITH_LIBTORCH", "compiled_with_cxx11_abi",
        "TYPE_CHECKING",
        # torch._utils_internal hooks for Meta's internal builds (multiprocessing setup, a
        # CUPTI profiler switch)
        "prepare_multiprocessing_environment", "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12",
    ],
    "Tensor": [
        # sparse layouts nbtorch.sparse lacks (it has COO and CSR)
        "to_sparse_bsc", "to_sparse_bsr", "to_sparse_csc", "sparse_resize_",
        "sparse_resize_and_clear_", "ccol_indices", "row_indices", "smm", "sspaddmm",
        "resize_as_sparse_",
        # vendor backends
        "to_mkldnn", "is_mkldnn", "is_vulkan", "is_xla", "is_ipu", "ipu", "is_maia",
        "is_mtia", "mtia", "is_xpu", "xpu", "is_mps", "chalf",
        # removed Variable API of PyTorch 0.3 (they raise in PyTorch itself)
        "volatile", "reinforce",
    ],
    "linalg": [],
    "special": [],
    "fft": [],
}


def namespaces(torch):
    """{label: PyTorch object} of the namespaces measured."""
    return {"torch": torch, "Tensor": torch.Tensor, "linalg": torch.linalg,
            "special": torch.special, "fft": torch.fft}


def nb_namespaces(nbtorch):
    """{label: nbtorch object or None} matching `namespaces`."""
    return {"torch": nbtorch, "Tensor": nbtorch.Tensor,
            "linalg": getattr(nbtorch, "linalg", None),
            "special": _try(nbtorch, "special"), "fft": _try(nbtorch, "fft")}


def _try(mod, name):
    try:
        return getattr(mod, name)
    except AttributeError:
        return None


def _is_api(torch, label, name, obj):
    """False for what a namespace holds but is no API: other libraries' modules it imported,
    a submodule's own re-import of `torch` or `Tensor`, and documentation templates."""
    if inspect.ismodule(obj) and not obj.__name__.startswith("torch"):
        return False                       # os, sys, math, ... imported by torch/__init__
    if obj is torch:                       # torch.torch: the package's reference to itself
        return False
    if label in ("linalg", "special", "fft"):
        if obj is torch or obj is torch.Tensor:
            return False
        if isinstance(obj, (str, dict)):   # common_args, common_notes: docstring templates
            return False
    return True


def public_names(torch, label):
    """Sorted public names of one PyTorch namespace (see `_is_api`)."""
    ns = namespaces(torch)[label]
    out = []
    for name in dir(ns):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(ns, name)
        except Exception:              # a deprecated attribute that raises on access
            obj = None
        if _is_api(torch, label, name, obj):
            out.append(name)
    return sorted(out)


def out_of_scope(label, name):
    """The OUT_OF_SCOPE pattern that covers `name`, or None."""
    for pat in OUT_OF_SCOPE[label]:
        if fnmatch.fnmatchcase(name, pat):
            return pat
    return None


def coverage(torch, nbtorch):
    """{label: (in-scope names, names nbtorch has, names it lacks)}."""
    nb = nb_namespaces(nbtorch)
    report = {}
    for label in namespaces(torch):
        scope = [n for n in public_names(torch, label) if out_of_scope(label, n) is None]
        have = [n for n in scope if nb[label] is not None and _has(nb[label], n)]
        report[label] = (scope, have, [n for n in scope if n not in set(have)])
    return report


def _has(obj, name):
    try:
        getattr(obj, name)
        return True
    except Exception:
        return False
