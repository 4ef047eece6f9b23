// tractile graph page: draws the precomputed layouts of tractile.tools.html_graph.
// Each group's rows and x centres were solved by Cassowary when the page was written;
// here rows are stacked with the heights of the current collapse state, and columns are
// pushed apart by the width that expanded groups gain.
(function () {
  "use strict";
  const errors = [];
  window.addEventListener("error", (event) => errors.push(String(event.message)));

  const data = JSON.parse(document.getElementById("graph-data").textContent);
  const NODE_H = 36, GROUP_H = 40, ROW_GAP = 34, PAD = 14, BAR = 22, MIN_ROW = 6, PLACEHOLDER_W = 14;
  const LANE_GAP = 10, MARGIN = 6;
  const svg = document.getElementById("graph");
  const viewport = document.getElementById("viewport");
  const details = document.getElementById("details");

  const nodes = new Map();
  data.nodes.forEach((node) => nodes.set(node.id, node));
  const groups = data.groups;
  const chainOf = new Map();  // node id -> group ids from the root down to its group
  data.nodes.forEach((node) => {
    const chain = [];
    for (let g = node.group; g !== null; g = groups[g].parent) chain.push(g);
    chainOf.set(node.id, chain.reverse());
  });
  const rowOf = groups.map((group) => {
    const rows = new Map();
    group.layout.rows.forEach((row, index) => row.forEach((key) => rows.set(key, index)));
    return rows;
  });

  const expanded = new Set([0]);
  let selected = null;
  let view = { x: 16, y: 16, k: 1 };
  let positions = new Map();
  let drawn = { nodes: 0, groups: 0, edges: 0 };

  const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;
  const isPlaceholder = (key) => key.indexOf("~") >= 0;
  const groupOfKey = (key) => (key[0] === "g" && !isPlaceholder(key) ? +key.slice(1) : null);
  const escape = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");

  function hue(op) {
    let h = 0;
    for (let i = 0; i < op.length; i++) h = (h * 31 + op.charCodeAt(i)) % 360;
    return h;
  }

  // layout ---------------------------------------------------------------------------------
  function itemSize(key, measured) {
    if (isPlaceholder(key)) return { w: PLACEHOLDER_W, h: 0 };
    if (key[0] === "n") return { w: nodes.get(+key.slice(1)).w, h: NODE_H };
    const gid = +key.slice(1);
    return expanded.has(gid) ? measured.get(gid).size : { w: groups[gid].w, h: GROUP_H };
  }

  function measure(gid, measured) {
    const layout = groups[gid].layout;
    const grown = [];
    layout.rows.forEach((row) => row.forEach((key) => {
      const child = groupOfKey(key);
      if (child !== null && expanded.has(child)) {
        measure(child, measured);
        grown.push({ x: layout.x[key], by: measured.get(child).size.w - groups[child].w });
      }
    }));
    const centres = new Map(), sizes = new Map(), rowsY = [], rowsH = [];
    const top = gid === 0 ? PAD : BAR + PAD;
    let y = top, right = 0;
    layout.rows.forEach((row) => {
      let height = MIN_ROW;
      row.forEach((key) => {
        const x = layout.x[key];
        let shift = 0;
        for (const item of grown) {
          if (item.x < x - 0.01) shift += item.by;
          else if (Math.abs(item.x - x) <= 0.01) shift += item.by / 2;
        }
        const size = itemSize(key, measured);
        centres.set(key, x + shift + PAD);
        sizes.set(key, size);
        right = Math.max(right, x + shift + PAD + size.w / 2);
        height = Math.max(height, size.h);
      });
      rowsY.push(y);
      rowsH.push(height);
      y += height + ROW_GAP;
    });
    const titleWidth = gid === 0 ? 0 : groups[gid].label.length * 7.2 + 36;
    const lanes = Object.keys(layout.lanes).length;
    const lanesX = right + PAD;
    const size = { w: Math.max(lanesX + lanes * LANE_GAP + (lanes ? PAD : 0), titleWidth, 60),
      h: (layout.rows.length ? y - ROW_GAP : top) + PAD };
    measured.set(gid, { size, centres, sizes, rowsY, rowsH, lanesX });
  }

  function place(gid, left, top, measured) {
    const m = measured.get(gid);
    groups[gid].layout.rows.forEach((row, index) => row.forEach((key) => {
      const size = m.sizes.get(key);
      const box = { x: left + m.centres.get(key) - size.w / 2, y: top + m.rowsY[index], w: size.w,
        h: isPlaceholder(key) ? m.rowsH[index] : size.h };
      positions.set(key, box);
      const child = groupOfKey(key);
      if (child !== null && expanded.has(child)) place(child, box.x, box.y, measured);
    }));
  }

  // drawing --------------------------------------------------------------------------------
  function visibleKey(nodeId) {
    for (const g of chainOf.get(nodeId)) if (!expanded.has(g)) return "g" + g;
    return "n" + nodeId;
  }

  function curve(points) {
    let d = `M${points[0].x.toFixed(1)},${points[0].y.toFixed(1)}`;
    for (let i = 1; i < points.length; i++) {
      const a = points[i - 1], b = points[i], mid = (a.y + b.y) / 2;
      d += ` C${a.x.toFixed(1)},${mid.toFixed(1)} ${b.x.toFixed(1)},${mid.toFixed(1)} ${b.x.toFixed(1)},${b.y.toFixed(1)}`;
    }
    return d;
  }

  // an edge leaves a node at a point spread over its width by output slot
  function sourcePort(box, key, slot, count) {
    if (key[0] !== "n" || count < 2) return box.x + box.w / 2;
    return box.x + box.w * (slot + 1) / (count + 1);
  }

  // the points of an edge up to (not including) where it enters its target
  function edgeRoute(edge, from, to, measured) {
    const [, , , lca, sourceItem, targetItem, outSlot, outCount] = edge;  // items at the lowest common group
    const a = positions.get(from), b = positions.get(to);
    const start = { x: sourcePort(a, from, outSlot, outCount), y: a.y + a.h };
    const points = [start];
    const outer = positions.get(sourceItem);
    if (sourceItem !== from && outer.y + outer.h - start.y > PAD + 2) {  // leave a group along its right margin
      const box = outer, x = box.x + box.w - MARGIN;
      points.push({ x, y: Math.min(start.y + ROW_GAP / 2, box.y + box.h) }, { x, y: box.y + box.h });
    }
    const layout = groups[lca].layout, rows = rowOf[lca];
    const chain = layout.chains[sourceItem];
    const lane = layout.lanes[sourceItem];
    if (chain && rows.has(sourceItem) && rows.has(targetItem)) {
      for (let r = rows.get(sourceItem) + 1; r < rows.get(targetItem); r++) {
        const key = chain[r];
        if (!key) break;
        const p = positions.get(key);
        points.push({ x: p.x + p.w / 2, y: p.y }, { x: p.x + p.w / 2, y: p.y + p.h });
      }
    } else if (lane !== undefined && (b.y > start.y + NODE_H + ROW_GAP || b.y < start.y)) {
      const origin = lca === 0 ? { x: 0 } : positions.get("g" + lca);
      const x = origin.x + measured.get(lca).lanesX + lane * LANE_GAP;
      points.push({ x, y: start.y + ROW_GAP / 2 }, { x, y: b.y - ROW_GAP / 2 });
    }
    const inner = positions.get(targetItem);
    if (targetItem !== to && b.y - inner.y > BAR + PAD + 2) {  // enter a group along its left margin
      const box = inner, x = box.x + MARGIN;
      points.push({ x, y: box.y }, { x, y: Math.max(b.y - ROW_GAP / 2, box.y) });
    }
    return points;
  }

  // edges enter their target left to right in the order they come from, so they do not cross
  function enterTargets(routes) {
    const byTarget = new Map();
    for (const route of routes) {
      if (!byTarget.has(route.to)) byTarget.set(route.to, []);
      byTarget.get(route.to).push(route);
    }
    for (const [to, list] of byTarget) {
      const box = positions.get(to);
      list.sort((a, b) => a.points[a.points.length - 1].x - b.points[b.points.length - 1].x);
      list.forEach((route, index) => route.points.push({ x: box.x + box.w * (index + 1) / (list.length + 1),
        y: box.y }));
    }
  }

  function render() {
    const measured = new Map();
    measure(0, measured);
    positions = new Map();
    place(0, 0, 0, measured);
    const frames = [], items = [], paths = [], labels = [];
    drawn = { nodes: 0, groups: 0, edges: 0 };
    const selectedKey = selected === null ? null : (selected.kind === "node" ? "n" : "g") + selected.id;
    for (const [key, box] of positions) {
      if (isPlaceholder(key)) continue;
      const gid = groupOfKey(key);
      const mark = key === selectedKey ? " selected" : "";
      if (gid !== null && expanded.has(gid)) {
        const group = groups[gid];
        frames.push(`<g class="group expanded${mark}" data-key="${key}"><rect x="${box.x}" y="${box.y}" ` +
          `width="${box.w}" height="${box.h}"></rect><rect class="bar" data-key="${key}" x="${box.x}" ` +
          `y="${box.y}" width="${box.w}" height="${BAR}"><title>${escape(group.path)} (click to collapse)` +
          `</title></rect><text x="${box.x + 8}" y="${box.y + 15}">▾ ${escape(group.label)}</text></g>`);
      } else if (gid !== null) {
        const group = groups[gid];
        drawn.groups++;
        items.push(`<g class="group collapsed${mark}" data-key="${key}"><rect x="${box.x}" y="${box.y}" ` +
          `width="${box.w}" height="${box.h}"></rect><rect class="frame" x="${box.x + 3}" y="${box.y + 3}" ` +
          `width="${box.w - 6}" height="${box.h - 6}"></rect><text x="${box.x + 10}" y="${box.y + 17}" ` +
          `font-weight="700">▸ ${escape(group.label)}</text><text class="count" x="${box.x + 10}" ` +
          `y="${box.y + 31}">${group.count} nodes</text><title>${escape(group.path)} (click to expand)</title></g>`);
      } else {
        const node = nodes.get(+key.slice(1));
        drawn.nodes++;
        const io = data.inputs.includes(node.name) || node.outputs.some((o) => o.output) ? " io" : "";
        items.push(`<g class="node${mark}${io}" data-key="${key}"><rect x="${box.x}" y="${box.y}" ` +
          `width="${box.w}" height="${box.h}" fill="hsl(${hue(node.op)},55%,90%)"></rect>` +
          `<text class="op" x="${box.x + 8}" y="${box.y + 15}">${escape(node.op)}</text>` +
          `<text class="name" x="${box.x + 8}" y="${box.y + 29}">${escape(node.label)}</text>` +
          `<title>${escape(node.name)} (${escape(node.op)})</title></g>`);
      }
    }
    const seen = new Map();
    for (const edge of data.edges) {
      const from = visibleKey(edge[0]), to = visibleKey(edge[1]);
      if (from === to) continue;
      const pair = from + ">" + to;
      if (seen.has(pair)) { seen.get(pair).count++; continue; }
      seen.set(pair, { edge, from, to, count: 1 });
    }
    const routes = [...seen.values()].map((route) =>
      Object.assign(route, { points: edgeRoute(route.edge, route.from, route.to, measured) }));
    enterTargets(routes);
    const labelled = new Map();  // one fact label per wire, under its source
    for (const { edge, from, to, points } of routes) {
      const hot = selectedKey !== null && (from === selectedKey || to === selectedKey) ? " highlight" : "";
      paths.push(`<path class="edge${hot}" d="${curve(points)}"></path>`);
      drawn.edges++;
      const texts = labelled.get(from) || new Set();
      labelled.set(from, texts);
      if (texts.has(edge[2])) continue;
      texts.add(edge[2]);
      const start = points[0];
      labels.push(`<text class="edge-label" x="${(start.x + 4).toFixed(1)}" ` +
        `y="${(start.y + 12 + 11 * (texts.size - 1)).toFixed(1)}">${escape(edge[2])}</text>`);
    }
    viewport.innerHTML = frames.join("") + paths.join("") + labels.join("") + items.join("");
    svg.dataset.visibleNodes = drawn.nodes;
    svg.dataset.visibleGroups = drawn.groups;
    applyView();
  }

  // view -----------------------------------------------------------------------------------
  function applyView() {
    viewport.setAttribute("transform", `translate(${view.x.toFixed(1)},${view.y.toFixed(1)}) scale(${view.k})`);
  }

  function graphSize() {
    let w = 0, h = 0;
    for (const box of positions.values()) { w = Math.max(w, box.x + box.w); h = Math.max(h, box.y + box.h); }
    return { w, h };
  }

  function fit(wholeGraph) {
    const size = graphSize(), rect = svg.getBoundingClientRect();
    const byWidth = (rect.width - 32) / Math.max(size.w, 1);
    const k = Math.min(1, wholeGraph ? Math.min(byWidth, (rect.height - 32) / Math.max(size.h, 1)) : byWidth);
    view = { k: Math.max(k, 0.02), x: Math.max(16, (rect.width - size.w * Math.max(k, 0.02)) / 2), y: 16 };
    applyView();
  }

  function keepInPlace(key, change) {
    const before = positions.get(key);
    change();
    render();
    const after = positions.get(key);
    if (before && after) {
      view.x += (before.x - after.x) * view.k;
      view.y += (before.y - after.y) * view.k;
      applyView();
    }
  }

  function centreOn(key) {
    const box = positions.get(key), rect = svg.getBoundingClientRect();
    if (!box) return;
    view.k = Math.max(view.k, 0.6);
    view.x = rect.width / 2 - (box.x + box.w / 2) * view.k;
    view.y = rect.height / 3 - (box.y + box.h / 2) * view.k;
    applyView();
  }

  // details ----------------------------------------------------------------------------------
  const link = (id) => `<a data-goto="${id}">${escape(nodes.has(id) ? nodes.get(id).name : "#" + id)}</a>`;

  function rows(entries) {
    if (!entries.length) return "<p class=\"hint\">none</p>";
    return "<table>" + entries.map(([k, v]) => `<tr><td>${escape(k)}</td><td>${v}</td></tr>`).join("") + "</table>";
  }

  function showNode(node) {
    const attributes = Object.entries(node.attrs).map(([k, v]) =>
      [k, `<code>${escape(typeof v === "string" ? v : JSON.stringify(v))}</code>`]);
    const inputs = node.inputs.map((input, slot) => [String(slot), `<code>${escape(input.fact)}</code><br>` +
      (input.const !== undefined ? `constant <b>${escape(input.wire)}</b>: <code>${escape(input.const)}</code>`
        : `from ${link(input.from)} <span class="sub">(${escape(input.wire)})</span>`)]);
    const outputs = node.outputs.map((output, slot) => [String(slot), `<code>${escape(output.fact)}</code> ` +
      `<span class="sub">${escape(output.wire)}${output.output ? " — model output" : ""}</span>` +
      (output.to.length ? "<br>to " + output.to.slice(0, 24).map(link).join(", ") +
        (output.to.length > 24 ? ` and ${output.to.length - 24} more` : "") : "")]);
    const path = groups[node.group].path;
    details.innerHTML = `<h2>${escape(node.op)}</h2><div class="sub">#${node.id} ${escape(node.name)}</div>` +
      (path ? `<div class="sub">in ${escape(path)}</div>` : "") +
      `<h3>attributes</h3>${rows(attributes)}<h3>inputs</h3>${rows(inputs)}<h3>outputs</h3>${rows(outputs)}`;
  }

  function showGroup(gid) {
    const group = groups[gid], ops = new Map();
    for (const node of data.nodes) {
      if (chainOf.get(node.id).includes(gid)) ops.set(node.op, (ops.get(node.op) || 0) + 1);
    }
    const histogram = [...ops.entries()].sort((a, b) => b[1] - a[1]).map(([op, n]) => [op, String(n)]);
    details.innerHTML = `<h2>${escape(group.path)}</h2><div class="sub">group of ${group.count} nodes, ` +
      `${expanded.has(gid) ? "expanded" : "collapsed"}</div><h3>ops</h3>${rows(histogram)}`;
  }

  function select(kind, id) {
    selected = { kind, id };
    if (kind === "node") showNode(nodes.get(id)); else showGroup(id);
  }

  function reveal(nodeId) {
    for (const g of chainOf.get(nodeId)) expanded.add(g);
    select("node", nodeId);
    render();
    centreOn("n" + nodeId);
  }

  // interaction ------------------------------------------------------------------------------
  let drag = null, dragged = false;
  svg.addEventListener("mousedown", (event) => {
    drag = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y };
    dragged = false;
  });
  window.addEventListener("mousemove", (event) => {
    if (!drag) return;
    const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) { dragged = true; svg.classList.add("panning"); }
    if (dragged) { view.x = drag.vx + dx; view.y = drag.vy + dy; applyView(); }
  });
  window.addEventListener("mouseup", () => { drag = null; svg.classList.remove("panning"); });
  svg.addEventListener("wheel", (event) => {
    event.preventDefault();
    const rect = svg.getBoundingClientRect(), mx = event.clientX - rect.left, my = event.clientY - rect.top;
    const k = Math.min(4, Math.max(0.02, view.k * Math.exp(-event.deltaY * 0.0015)));
    view.x = mx - (mx - view.x) * (k / view.k);
    view.y = my - (my - view.y) * (k / view.k);
    view.k = k;
    applyView();
  }, { passive: false });
  svg.addEventListener("click", (event) => {
    if (dragged) { dragged = false; return; }
    const target = event.target.closest("[data-key]");
    if (!target) return;
    const key = target.dataset.key, gid = groupOfKey(key);
    if (gid === null) {
      select("node", +key.slice(1));
      render();
    } else if (expanded.has(gid)) {
      if (!target.classList.contains("bar")) return;
      select("group", gid);
      keepInPlace(key, () => collapse(gid));
    } else {
      select("group", gid);
      keepInPlace(key, () => expanded.add(gid));
    }
  });
  details.addEventListener("click", (event) => {
    const target = event.target.closest("[data-goto]");
    if (target) reveal(+target.dataset.goto);
  });

  function collapse(gid) {
    if (gid === 0) return;
    expanded.delete(gid);
    groups.forEach((group) => {  // what is inside a collapsed group opens collapsed next time
      for (let g = group.parent; g !== null; g = groups[g].parent) if (g === gid) expanded.delete(group.id);
    });
  }

  const names = document.getElementById("node-names");
  names.innerHTML = data.nodes.map((node) => `<option value="${escape(node.name)}"></option>`).join("");
  document.getElementById("search").addEventListener("change", (event) => {
    const text = event.target.value.trim().toLowerCase();
    if (!text) return;
    const found = data.nodes.find((node) => node.name.toLowerCase() === text) ||
      data.nodes.find((node) => node.name.toLowerCase().includes(text));
    if (found) reveal(found.id);
  });
  document.getElementById("expand-all").addEventListener("click", () => {
    groups.forEach((group) => expanded.add(group.id));
    render();
    fit(false);
  });
  document.getElementById("collapse-all").addEventListener("click", () => {
    expanded.clear();
    expanded.add(0);
    render();
    fit(false);
  });
  document.getElementById("fit").addEventListener("click", () => fit(true));

  document.getElementById("title").innerHTML = `${escape(data.title)}<small>` +
    [data.stage, plural(data.nodes.length, "node"), plural(groups.length - 1, "group")].filter(Boolean).map(escape).join(" · ") +
    "</small>";
  render();
  fit(false);

  window.tractileGraph = {
    errors,
    visibleNodes: () => drawn.nodes,
    visibleGroups: () => drawn.groups,
    visibleEdges: () => drawn.edges,
    groups: () => groups.map((g) => ({ id: g.id, path: g.path, depth: g.depth, count: g.count,
      expanded: expanded.has(g.id) })),
    expand: (gid) => { expanded.add(gid); render(); },
    collapse: (gid) => { collapse(gid); render(); },
    reveal: (name) => { const node = data.nodes.find((n) => n.name === name); if (node) reveal(node.id); },
    selectedText: () => details.innerText,
  };
})();
