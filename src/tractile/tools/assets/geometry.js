// tractile graph page, geometry: stacks the rows that tractile.tools.layout solved with
// Cassowary for every group, with the heights of the current collapse state, pushes columns
// apart by the width expanded groups gain, and routes edges (through the placeholders of
// long edges, along lanes, along group margins).
function tractileGeometry(data, expanded) {
  "use strict";
  const NODE_H = 36, GROUP_H = 40, ROW_GAP = 34, PAD = 14, BAR = 22, MIN_ROW = 6, PLACEHOLDER_W = 14;
  const LANE_GAP = 10, MARGIN = 6;
  const nodes = new Map();
  data.nodes.forEach((node) => nodes.set(node.id, node));
  const groups = data.groups;
  const rowOf = groups.map((group) => {
    const rows = new Map();
    group.layout.rows.forEach((row, index) => row.forEach((key) => rows.set(key, index)));
    return rows;
  });
  const isPlaceholder = (key) => key.indexOf("~") >= 0;
  const groupOfKey = (key) => (key[0] === "g" && !isPlaceholder(key) ? +key.slice(1) : null);
  let positions = new Map(), measured = new Map();

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
  function edgeRoute(edge, from, to) {
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

  // every item's box (top-left, size) for the current collapse state
  function layOut() {
    measured = new Map();
    measure(0, measured);
    positions = new Map();
    place(0, 0, 0, measured);
    return positions;
  }

  return { layOut, edgeRoute, enterTargets, curve, isPlaceholder, groupOfKey, BAR };
}
