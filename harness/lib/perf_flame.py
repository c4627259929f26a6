"""Folded stacks -> an interactive flame graph SVG (no dependencies).

    perf_flame.py c-ramp.folded c-ramp.svg [--title T] [--subtitle S] [--ours-syms FILE]

Written for the harness after Brendan Gregg's flamegraph.pl (the folded
format is his: "root;caller;leaf COUNT" per line): one rectangle per frame,
as wide as the samples it and its callees took, callers below callees; a
<title> tooltip with the frame, its samples, its share and its layer
(perf_layers.py); colour by layer. Click a frame to zoom into it, click the
bottom bar (or press Escape) to reset. Frames narrower than --min-width
pixels are left out (their samples still count in their callers' widths).
"""
import argparse
import html
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_layers as pl  # noqa: E402

COLOURS = pl.COLOURS
GENERIC_COLOUR = "#d9d9d9"   # transparent frames (memcpy, locks, ...): their caller's layer counts

JS = r"""
var W = %(width)d, PAD = %(pad)d, FW = %(fontw)f;
function frames() { return document.querySelectorAll('g.f'); }
function label(g, w) {
  var t = g.querySelector('text'), n = g.getAttribute('data-n');
  var fit = Math.floor((w - 6) / FW);
  t.textContent = fit < 3 ? '' : (n.length <= fit ? n : n.substring(0, fit - 2) + '..');
}
function place(g, x, w) {
  var r = g.querySelector('rect'), t = g.querySelector('text');
  r.setAttribute('x', x); r.setAttribute('width', Math.max(w, 0.5)); t.setAttribute('x', x + 3);
  label(g, w);
}
function zoom(z) {
  var zx = +z.getAttribute('data-x'), zw = +z.getAttribute('data-w'), zd = +z.getAttribute('data-d');
  var scale = (W - 2 * PAD) / zw;
  frames().forEach(function (g) {
    var x = +g.getAttribute('data-x'), w = +g.getAttribute('data-w'), d = +g.getAttribute('data-d');
    if (d < zd) {                       // ancestors: full width, dimmed
      if (x <= zx && x + w >= zx + zw - 1e-6) { g.style.display = ''; g.style.opacity = 0.6; place(g, PAD, W - 2 * PAD); }
      else g.style.display = 'none';
    } else if (x >= zx - 1e-6 && x + w <= zx + zw + 1e-6) {
      g.style.display = ''; g.style.opacity = 1; place(g, PAD + (x - zx) * scale, w * scale);
    } else g.style.display = 'none';
  });
}
function reset() {
  frames().forEach(function (g) {
    g.style.display = ''; g.style.opacity = 1;
    place(g, PAD + (+g.getAttribute('data-x')), +g.getAttribute('data-w'));
  });
}
document.addEventListener('click', function (e) {
  var g = e.target.closest ? e.target.closest('g.f') : null;
  if (!g) return;
  if (+g.getAttribute('data-d') === 0) reset(); else zoom(g);
});
document.addEventListener('keydown', function (e) { if (e.key === 'Escape') reset(); });
"""


class Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name):
        self.name = name
        self.count = 0
        self.children = {}


def build_tree(folded):
    """folded: {tuple(frames root first): samples} -> root Node ("all")."""
    root = Node("all")
    for stack, n in folded.items():
        root.count += n
        node = root
        for name in stack:
            child = node.children.get(name)
            if child is None:
                child = node.children[name] = Node(name)
            child.count += n
            node = child
    return root


def depth_of(node):
    return 1 + max((depth_of(c) for c in node.children.values()), default=0)


def name_layer(name, classifier, frame_layers=None):
    """The layer a folded frame name belongs to (its colour and tooltip):
    from frame_layers (perf_layers.py fold's summary, which saw the frame's
    library) when it has the name, else from the name alone."""
    if name == "all":
        return None
    if frame_layers and name in frame_layers:
        return frame_layers[name]
    if name.endswith("_[k]"):
        f = pl.Frame(name[:-4], "[kernel.kallsyms]", True)
    elif name.startswith("[") and name.endswith("]"):
        f = pl.Frame(None, "/" + name[1:-1], False)
    else:
        f = pl.Frame(name, "", False)
        if name in classifier.ours_syms:
            return pl.LIBC1M
    return classifier.frame_layer_name(f)


def render(folded, title="Flame graph", subtitle="", width=1200, frame_h=16, font=12,
           min_width=0.1, classifier=None, frame_layers=None):
    """The SVG text of a flame graph of folded ({stack tuple: samples})."""
    classifier = classifier or pl.Classifier()
    root = build_tree(folded)
    pad = 10
    fontw = font * 0.59
    total = root.count
    depth = depth_of(root) if total else 1
    top = 3 * font + 24 + (font + 6)          # titles and the legend
    height = top + depth * frame_h + 2 * font + 10
    out = ['<?xml version="1.0" standalone="no"?>',
           '<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" '
           'xmlns="http://www.w3.org/2000/svg">' % (width, height, width, height),
           '<style>text { font-family: Verdana, sans-serif; font-size: %dpx; fill: #000; } '
           'g.f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; } '
           '.t { font-size: %dpx; } .s { fill: #555; }</style>' % (font, font + 5),
           '<rect x="0" y="0" width="100%" height="100%" fill="#fcfcf6"/>',
           '<text class="t" x="%d" y="%d" text-anchor="middle">%s</text>'
           % (width // 2, font + 10, html.escape(title)),
           '<text class="s" x="%d" y="%d" text-anchor="middle">%s</text>'
           % (width // 2, 2 * font + 16, html.escape(subtitle or "%d samples; click a frame to zoom, Escape to reset" % total))]
    # legend: one swatch per layer
    lx, ly = pad, 3 * font + 22
    for layer in pl.LAYERS + (pl.GENERIC,):
        colour = COLOURS.get(layer, GENERIC_COLOUR)
        out.append('<rect x="%.1f" y="%d" width="10" height="10" fill="%s"/>' % (lx, ly - 9, colour))
        out.append('<text x="%.1f" y="%d" style="font-size:%dpx">%s</text>' % (lx + 13, ly, font - 2, html.escape(layer)))
        lx += 13 + (len(layer) + 2) * (font - 2) * 0.55
        if lx > width - 150:
            lx, ly = pad, ly + font + 2
    if not total:
        out.append('<text x="%d" y="%d">no samples</text>' % (pad, top + frame_h))
        out.append("</svg>")
        return "\n".join(out) + "\n"
    scale = (width - 2 * pad) / total
    base_y = height - 2 * font - frame_h

    def emit(node, x, d):
        w = node.count * scale
        if w < min_width:
            return
        y = base_y - d * frame_h
        layer = name_layer(node.name, classifier, frame_layers)
        colour = COLOURS.get(layer, GENERIC_COLOUR) if layer else "#f0e6d2"
        pct = 100.0 * node.count / total
        tip = "%s (%d samples, %.2f%%)%s" % (node.name, node.count, pct, "\nlayer: %s" % layer if layer else "")
        fit = int((w - 6) / fontw)
        lab = "" if fit < 3 else (node.name if len(node.name) <= fit else node.name[:fit - 2] + "..")
        out.append('<g class="f" data-x="%.3f" data-w="%.3f" data-d="%d" data-n="%s"><title>%s</title>'
                   '<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" rx="2"/>'
                   '<text x="%.2f" y="%d">%s</text></g>'
                   % (x - pad, w, d, html.escape(node.name, quote=True), html.escape(tip),
                      x, y, max(w, 0.5), frame_h - 1, colour, x + 3, y + frame_h - 4, html.escape(lab)))
        cx = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            emit(child, cx, d + 1)
            cx += child.count * scale

    emit(root, pad, 0)
    out.append("<script><![CDATA[%s]]></script>" % (JS % {"width": width, "pad": pad, "fontw": fontw}))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(prog="perf_flame.py", description=__doc__.split("\n\n")[0])
    p.add_argument("folded")
    p.add_argument("svg")
    p.add_argument("--title", default="Flame graph")
    p.add_argument("--subtitle", default="")
    p.add_argument("--width", type=int, default=1200)
    p.add_argument("--min-width", type=float, default=0.1)
    p.add_argument("--ours-syms", help="libc1m symbol list (colours them as libc1m)")
    p.add_argument("--summary", help="perf_layers.py fold's summary: each frame's layer, as classified with its library")
    a = p.parse_args(argv)
    if not 200 <= a.width <= 20000:
        p.error("--width: 200..20000 pixels")
    with open(a.folded, errors="replace") as f:
        folded = pl.read_folded(f)
    cl = pl.Classifier(pl.read_syms(a.ours_syms), ())
    frame_layers = None
    if a.summary:
        with open(a.summary) as f:
            frame_layers = json.load(f).get("frame_layers")
    svg = render(folded, a.title, a.subtitle, a.width, min_width=a.min_width, classifier=cl,
                 frame_layers=frame_layers)
    tmp = a.svg + ".tmp"
    with open(tmp, "w") as f:
        f.write(svg)
    os.replace(tmp, a.svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
