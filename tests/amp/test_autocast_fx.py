"""autocast beside fx: the tables fx builds of the public ops never hold autocast's hooks."""
import nbtorch


def test_fx_tables_built_under_autocast_keep_the_ops():
    # fx's tables of public ops, built for the first time inside an autocast region, used
    # to hold autocast's wrappers: traces recorded them as targets afterwards, and
    # jit.save called them not public
    import nbtorch.fx as fx
    from nbtorch.fx import _names, _patch
    saved = _patch._TABLE, _patch._BY_ID, _names._PUBLIC
    _patch._TABLE = _patch._BY_ID = _names._PUBLIC = None
    try:
        with nbtorch.autocast("cpu"):
            _patch._table()
            _names._public_names()
        gm = fx.symbolic_trace(lambda x: nbtorch.exp(x) + 1)
        assert nbtorch.exp in [n.target for n in gm.graph.nodes if n.op == "call_function"]
        assert _names.qualified_name(nbtorch.exp) == "torch.exp"
    finally:
        _patch._TABLE, _patch._BY_ID, _names._PUBLIC = saved
