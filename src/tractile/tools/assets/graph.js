// tractile graph page: draws what geometry.js places, handles collapsing, selection, pan and zoom.
(function () {
  "use strict";
  const errors = [];
  window.addEventListener("error", (event) => errors.push(String(event.message)));

  const data = JSON.parse(document.getElementById("graph-data").textContent);
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
  const expanded = new Set([0]);
  const geometry = tractileGeometry(data, expanded);
  const { isPlaceholder, groupOfKey, curve, BAR } = geometry;
  let selected = null;
  let view = { x: 16, y: 16, k: 1 };
  let positions = new Map();
  let drawn = { nodes: 0, groups: 0, edges: 0 };

  const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;
  const escape = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");

  function hue(op) {
    let h = 0;
    for (let i = 0; i < op.length; i++) h = (h * 31 + op.charCodeAt(i)) % 360;
    return h;
  }

  // drawing --------------------------------------------------------------------------------
  function visibleKey(nodeId) {
    for (const g of chainOf.get(nodeId)) if (!expanded.has(g)) return "g" + g;
    return "n" + nodeId;
  }

  function render() {
    positions = geometry.layOut();
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
      Object.assign(route, { points: geometry.edgeRoute(route.edge, route.from, route.to) }));
    geometry.enterTargets(routes);
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
        : `from ${link(input.from)}` + (nodes.has(input.from) && nodes.get(input.from).name === input.wire ? ""
          : ` <span class="sub">(${escape(input.wire)})</span>`))]);
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
