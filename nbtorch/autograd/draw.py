"""Draw the autograd tape of a result as SVG, in pure Python (no Graphviz).

``nbtorch.autograd.graph.draw(loss)`` returns a `GraphDrawing`: Jupyter shows
it inline (`_repr_svg_`), ``.save("graph.svg")`` writes it. Boxes are the
tape's nodes — one per recorded op (``MulBackward0``...) with the shapes of
the op's outputs and the bytes it saved for backward, and one
``AccumulateGrad`` per leaf with the leaf's shape (and its name, when
``params=dict(model.named_parameters())`` is given). Arrows follow
``next_functions``, the way gradients flow: from the result at the top down
to the leaves.

Layout: each node sits on the layer of its longest path from the result (so
every arrow points down); within a layer nodes are ordered by the mean
position of the nodes above that point at them, which keeps crossings few.
"""
from collections import deque
from xml.sax.saxutils import escape

__all__ = ["draw", "GraphDrawing", "collect"]

_CHAR_W, _LINE_H, _PAD, _GAP_X, _GAP_Y = 7.0, 15.0, 8.0, 24.0, 46.0
_COLORS = {"root": "#c9e7c1", "leaf": "#cfe0f5", "op": "#f3f3f3", "released": "#eeeeee"}


class _Box:
    __slots__ = ("key", "lines", "kind", "layer", "x", "y", "w", "h", "order")

    def __init__(self, key, lines, kind):
        self.key, self.lines, self.kind = key, lines, kind
        self.layer, self.x, self.y, self.order = 0, 0.0, 0.0, 0.0
        self.w = max(len(s) for s in lines) * _CHAR_W + 2 * _PAD
        self.h = len(lines) * _LINE_H + _PAD


def _shape(shape):
    return str(tuple(int(s) for s in shape))


def _fmt_bytes(n):
    for unit in ("B", "KB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _saved_bytes(node):
    """(bytes saved for backward, released?) of a recorded node."""
    saved = getattr(node, "_saved", None)
    if saved is None:
        return 0, False
    if not isinstance(saved, tuple):           # freed by a backward pass
        return 0, True
    return sum(s[0].nbytes for s in saved if s is not None), False


def _node_lines(node, names):
    if node._is_accumulate:
        v = node.variable
        label = names.get(id(v))
        return ([label] if label else []) + ["AccumulateGrad", _shape(v.shape)], "leaf"
    lines = [node.name()]
    outs = [m for m in node._output_meta or () if m is not None]
    if outs:
        lines.append("out " + ", ".join(_shape(m[0]) for m in outs))
    n, released = _saved_bytes(node)
    if released:
        lines.append("saved: freed")
    elif n:
        lines.append(f"saved {_fmt_bytes(n)}")
    return lines, "released" if released else "op"


def collect(roots):
    """Every node reachable from `roots` (Nodes) and the (parent, child) edges, iteratively."""
    nodes, edges, seen = [], [], set()
    queue = deque(r for r in roots if r is not None)
    for r in queue:
        seen.add(id(r))
    while queue:
        node = queue.popleft()
        nodes.append(node)
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            edges.append((node, nxt))
            if id(nxt) not in seen:
                seen.add(id(nxt))
                queue.append(nxt)
    return nodes, edges


def _layers(boxes, edges):
    """Longest-path layering from the roots (Kahn's algorithm, no recursion)."""
    indeg = {k: 0 for k in boxes}
    children = {k: [] for k in boxes}
    for p, c in edges:
        indeg[c] += 1
        children[p].append(c)
    ready = deque(k for k, d in indeg.items() if d == 0)
    while ready:
        k = ready.popleft()
        for c in children[k]:
            boxes[c].layer = max(boxes[c].layer, boxes[k].layer + 1)
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    return children


def _place(boxes, edges):
    parents = {k: [] for k in boxes}
    for p, c in edges:
        parents[c].append(p)
    by_layer = {}
    for b in boxes.values():
        by_layer.setdefault(b.layer, []).append(b)
    y = _PAD
    width = 0.0
    for layer in sorted(by_layer):
        row = by_layer[layer]
        for b in row:        # barycentre of the parents' order above
            ps = [boxes[p].order for p in parents[b.key]]
            b.order = sum(ps) / len(ps) if ps else b.order
        row.sort(key=lambda b: b.order)
        x = _PAD
        for i, b in enumerate(row):
            b.order, b.x, b.y = i, x, y
            x += b.w + _GAP_X
        width = max(width, x)
        y += max(b.h for b in row) + _GAP_Y
    for row in by_layer.values():       # centre each row
        used = row[-1].x + row[-1].w + _PAD
        shift = (width - used) / 2
        for b in row:
            b.x += shift
    return width, y - _GAP_Y + _PAD


class GraphDrawing:
    """An SVG drawing of an autograd graph; Jupyter displays it inline."""

    def __init__(self, svg, n_nodes, n_edges):
        self.svg, self.n_nodes, self.n_edges = svg, n_nodes, n_edges

    def _repr_svg_(self):
        return self.svg

    def save(self, path):
        """Write the SVG to `path`."""
        with open(path, "w") as f:
            f.write(self.svg)

    def __repr__(self):
        return f"<autograd graph: {self.n_nodes} nodes, {self.n_edges} edges (SVG)>"


def draw(tensors, params=None):
    """Draw the autograd graph that produced `tensors` (a tensor or a list) as SVG.

    Args:
        tensors: result tensor(s) with a ``grad_fn`` (or leaves requiring grad).
        params: optional ``{name: tensor}`` (e.g. ``dict(model.named_parameters())``)
            to label the leaves.

    Example:
        >>> g = nbtorch.autograd.graph.draw(loss, params=dict(model.named_parameters()))
        >>> g.save("graph.svg")      # in Jupyter, just `g` displays it
    """
    from .graph import gradient_edge
    outs = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    roots = []
    for t in outs:
        edge = gradient_edge(t)
        if edge is None:
            raise RuntimeError("draw: the tensor does not require grad and has no grad_fn, "
                               "so there is no graph to draw")
        roots.append(edge[0])
    names = {id(v): k for k, v in (params or {}).items()}
    nodes, edges = collect(roots)
    boxes = {}
    for n in nodes:
        lines, kind = _node_lines(n, names)
        boxes[id(n)] = _Box(id(n), lines, kind)
    e_keys = [(id(p), id(c)) for p, c in edges]
    result_boxes = []
    for i, t in enumerate(outs):           # the result tensors themselves, on top
        key = ("out", i)
        boxes[key] = _Box(key, ["result " + _shape(t.shape), str(t.dtype)], "root")
        result_boxes.append(key)
        e_keys.append((key, id(roots[i])))
    _layers(boxes, e_keys)
    width, height = _place(boxes, e_keys)
    return GraphDrawing(_svg(boxes, e_keys, width, height), len(nodes), len(edges))


def _svg(boxes, edges, width, height):
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
             'font-family="monospace" font-size="12">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
             '<path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>']
    for p, c in edges:
        a, b = boxes[p], boxes[c]
        x1, y1 = a.x + a.w / 2, a.y + a.h
        x2, y2 = b.x + b.w / 2, b.y
        my = (y1 + y2) / 2
        parts.append(f'<path d="M {x1:.1f} {y1:.1f} C {x1:.1f} {my:.1f}, {x2:.1f} {my:.1f}, '
                     f'{x2:.1f} {y2:.1f}" fill="none" stroke="#555" '
                     'marker-end="url(#arrow)"/>')
    for b in boxes.values():
        parts.append(f'<g class="node {b.kind}"><title>{escape(b.lines[0])}</title>'
                     f'<rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" '
                     f'rx="4" fill="{_COLORS[b.kind]}" stroke="#333"/>')
        for i, line in enumerate(b.lines):
            weight = ' font-weight="bold"' if i == 0 else ""
            parts.append(f'<text x="{b.x + b.w / 2:.1f}" '
                         f'y="{b.y + _PAD / 2 + (i + 0.8) * _LINE_H:.1f}" '
                         f'text-anchor="middle"{weight}>{escape(line)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)
