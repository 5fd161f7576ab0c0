"""Graph.lint (the invariants every pass may rely on) and Graph.print_tabular."""
from ._names import pretty_target

__all__ = ["lint_graph", "tabular"]


def _check_targets(graph, node):
    owner = graph.owning_module
    if owner is None or node.op not in ("get_attr", "call_module"):
        return
    obj = owner
    atoms = node.target.split(".")
    for i, atom in enumerate(atoms):
        if not hasattr(obj, atom):
            seen = ".".join(atoms[:i]) or "the root module"
            raise RuntimeError(f"Node {node} target {node.target} references nonexistent "
                               f"attribute {atom} of {seen}")
        obj = getattr(obj, atom)
    from ..nn import Module
    if node.op == "call_module" and not isinstance(obj, Module):
        raise RuntimeError(f"Node {node} target {node.target} is {type(obj).__name__}, "
                           "not a Module, but it is called with call_module")


def lint_graph(graph):
    """Raise RuntimeError on the first broken invariant: nodes in order and in this graph."""
    seen, names, outputs = set(), {}, []
    for node in graph.nodes:
        if node.graph is not graph:
            raise RuntimeError(f"Node '{node}' does not belong to this Graph")
        if node.name in names:
            raise RuntimeError(f"Node redefined name {node.name}!")
        names[node.name] = node
        if outputs:
            raise RuntimeError(f"Node '{node}' comes after the output node "
                               f"'{outputs[0]}': a graph ends with its output")
        for arg in node._input_nodes:
            if arg.graph is not graph:
                raise RuntimeError(
                    f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was "
                    "used as an argument! If you are copying nodes from another graph, make "
                    "sure to use ``arg_transform`` on node_copy() to remap values")
            if arg._erased:
                raise RuntimeError(
                    f"Argument '{arg}' of Node '{node}' was erased from the graph but is "
                    "still used: a dangling node (replace its uses before erasing it)")
            if arg not in seen:
                raise RuntimeError(
                    f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                    "Please check that Nodes in the graph are topologically ordered\n"
                    f"{graph}")
        for user in node.users:
            if node not in user._input_nodes:
                raise RuntimeError(f"Node '{node}' lists '{user}' as a user, but '{user}' "
                                   "does not read it")
            if user._erased or user.graph is not graph:
                raise RuntimeError(f"Node '{node}' is used by '{user}', which is not in this "
                                   "Graph: a dangling node")
        if node.op == "output":
            outputs.append(node)
        _check_targets(graph, node)
        seen.add(node)
    n = sum(1 for _ in graph.nodes)
    if n != len(graph.nodes):
        raise RuntimeError(f"Graph's node count ({len(graph.nodes)}) differs from the nodes "
                           f"in its list ({n})")


def tabular(graph):
    """The nodes as a text table, like tabulate's 'simple' format in fx's print_tabular."""
    rows = [["opcode", "name", "target", "args", "kwargs"]]
    rows += [[n.op, n.name, pretty_target(n.target), str(n.args), str(n.kwargs)]
             for n in graph.nodes]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
