// tractile compile report: summary cards, the memory plan drawn, the sortable layer table.
// Every text from the model reaches the page through textContent or an attribute, never as markup.
(function () {
  "use strict";
  const errors = [];
  window.addEventListener("error", (event) => errors.push(String(event.message)));

  const data = JSON.parse(document.getElementById("report-data").textContent);
  const report = data.report;
  const check = data.verification;
  const SVG = "http://www.w3.org/2000/svg";
  const byStep = report.nodes;
  const layerOf = new Map((check ? check.layers : []).map((layer, step) => [step, layer]));

  // helpers -----------------------------------------------------------------------------------
  const grouped = (value) => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const bytes = (value) => `${grouped(value)} B`;
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function hue(text) {
    let h = 0;
    for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) % 360;
    return h;
  }
  const nodeLabel = (step) => {
    const node = byStep[step];
    return node ? `#${node.node} ${node.name} (${node.op})` : `step ${step}`;
  };
  const shapeText = (shape) => (shape.length ? shape.join("×") : "scalar");

  // summary -----------------------------------------------------------------------------------
  function card(title, big, unit, ...lines) {
    const box = el("div", { class: "card" }, el("h3", {}, title));
    if (big !== null) box.append(el("div", { class: "big" }, big, unit ? el("small", {}, unit) : null));
    for (const line of lines) if (line !== null) box.append(line instanceof Node ? line : el("p", {}, line));
    return box;
  }
  function table(headers, rows, numeric) {
    const head = el("tr", {}, ...headers.map((h, i) => el("th", numeric[i] ? { class: "num" } : {}, h)));
    const body = rows.map((row) => el("tr", {}, ...row.map((cell, i) => el("td", numeric[i] ? { class: "num" } : {}, cell))));
    return el("table", {}, el("thead", {}, head), el("tbody", {}, ...body));
  }

  function summary() {
    const box = document.getElementById("summary");
    const peak = report.peak;
    box.append(card("Arena (RAM)", grouped(report.arena_bytes), "B",
      `${report.planner}; ${report.in_place_nodes} node${report.in_place_nodes === 1 ? "" : "s"} in place`,
      `lower bound ${bytes(report.lower_bound_bytes)} (live at once), without reuse ${bytes(report.no_reuse_bytes)}`,
      `peak at step ${peak.step}: ${bytes(peak.bytes)} in use, ${nodeLabel(peak.step)}`));
    const micro = data.micro;
    if (micro && micro.head !== undefined) {
      const ratio = report.arena_bytes / micro.head;
      box.append(card("TFLite Micro arena, same model", grouped(micro.head), "B",
        `planned tensors (inputs and outputs included); ${bytes(micro.total)} used in all`,
        `tractile's arena is ${(100 * ratio).toFixed(0)}% of it` +
        (report.inputs_in_arena ? "" : `; tractile's inputs and outputs: ${bytes(report.io_bytes)}`)));
    } else {
      box.append(card("TFLite Micro arena", null, null, micro ? `not measured: ${micro.absent}` :
        "not measured (no TFLite file was given for this model)"));
    }
    box.append(card("State", grouped(report.state_bytes), "B", report.state.length ?
      `${report.state.length} buffer${report.state.length === 1 ? "" : "s"} kept across invocations (below)` :
      "nothing kept across invocations"));
    box.append(card("Constants (flash)", grouped(report.constants_bytes), "B",
      `weights, biases, requantization tables; ${report.nodes.length} nodes`));
    const io = card(report.inputs_in_arena ? "Outputs (inputs in the arena)" : "Inputs and outputs",
      grouped(report.io_bytes), "B",
      table(["", "name", "shape", "type", "bytes"],
        [...report.inputs.map((t) => ["in", t.name, shapeText(t.shape), t.dtype, grouped(t.bytes) + (t.in_arena ? " (arena)" : "")]),
          ...report.outputs.map((t) => ["out", t.name, shapeText(t.shape), t.dtype, grouped(t.bytes)])],
        [false, false, false, false, true]));
    io.classList.add("wide");
    box.append(io);
    if (!check) {
      box.append(card("Measured on a device", null, null, "not measured: compile with --target … --verify to run it " +
        "in an emulator and see flash, stack and instructions per layer"));
      return;
    }
    const verdict = el("span", { class: check.verified ? "ok" : "bad" },
      check.verified ? "bit-exact against the interpreter" : `DIFFERS: ${check.first_difference}`);
    box.append(card(`Verified on ${check.board} (${check.target})`, grouped(check.cycles_per_inference),
      check.counted.split(" (")[0] + " per inference",
      el("p", {}, `${check.inputs_checked} input${check.inputs_checked === 1 ? "" : "s"}: `, verdict), check.counted));
    const ram = check.ram_bytes;
    box.append(card("RAM on the device", grouped(ram.total), "B",
      `context ${bytes(ram.context)} (arena and state), ${report.inputs_in_arena ? "outputs" : "inputs and outputs"} ` +
      `${bytes(ram.io)}, peak stack ${bytes(ram.stack_peak)}`, `whole test firmware ${bytes(ram.firmware)}`));
    box.append(card("Flash on the device", grouped(check.flash_bytes.model), "B",
      `model code and constants; whole test firmware ${bytes(check.flash_bytes.firmware)}`));
    const code = Object.entries(check.code_bytes || {});
    if (code.length) {
      const total = code.reduce((sum, [, size]) => sum + size, 0);
      box.append(card("Code per kernel family", grouped(total), "B",
        table(["file", "bytes"], code.map(([file, size]) => [file, grouped(size)]), [false, true]),
        el("p", {}, "functions kept out of line; kernels inlined into invoke count in the model's file")));
    }
  }

  // memory plan ---------------------------------------------------------------------------------
  const ROW = 18, TOP = 30, LABEL = 300, RIGHT = 150;
  const plan = document.getElementById("plan");
  let drawnTensors = 0;

  function niceStep(span, count) {
    const raw = span / Math.max(count, 1);
    const power = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    for (const k of [1, 2, 2.5, 5, 10]) if (k * power >= raw) return k * power;
    return 10 * power;
  }
  // ticks in bytes for small arenas, in whole KiB steps for larger ones
  function ticks(arena, count) {
    const unit = arena >= 4096 ? 1024 : 1;
    const step = Math.max(1, Math.round(niceStep(arena / unit, count))) * unit;
    const values = [];
    for (let value = 0; value <= arena; value += step) values.push(value);
    return values.map((value) => [value, unit === 1 ? grouped(value) : `${grouped(value / unit)} KiB`]);
  }
  const tail = (text, limit) => (text.length > limit ? "…" + text.slice(text.length - limit + 1) : text);

  function tensorTip(tensor) {
    const consumers = tensor.consumers.map(nodeLabel);
    return [`${tensor.var}`, `${tensor.dtype} ${shapeText(tensor.shape)}: ${bytes(tensor.bytes)} at offset ` +
      `${grouped(tensor.offset)}…${grouped(tensor.offset + tensor.bytes)}`,
    `placement: ${tensor.placement}`,
    `made by ${tensor.producer === null ? "the caller (before the first node)" : nodeLabel(tensor.producer)}`,
    `read by ${consumers.length ? consumers.join(", ") : "no node (scratch)"}`,
    `live from step ${tensor.first} to step ${tensor.last}`];
  }

  function drawPlan() {
    while (plan.lastChild && plan.lastChild.nodeName !== "defs") plan.removeChild(plan.lastChild);
    const steps = byStep.length;
    const width = Math.max(900, document.getElementById("plan-box").clientWidth - 2);
    const plotWidth = width - LABEL - RIGHT;
    const arena = Math.max(report.arena_bytes, 1);
    const x = (offset) => LABEL + (offset / arena) * plotWidth;
    const height = TOP + ROW * Math.max(steps, 1) + 8;
    plan.setAttribute("width", width);
    plan.setAttribute("height", height);
    plan.setAttribute("viewBox", `0 0 ${width} ${height}`);
    const banded = new Set(report.nodes.filter((n) => n.members.length > 1).map((n) => n.step));
    const rows = svg("g", { class: "rows" });
    for (let step = 0; step < steps; step++) {
      const classes = ["row-bg", step % 2 ? "odd" : "even"];
      if (banded.has(step)) classes.push("banded");
      if (step === report.peak.step) classes.push("peak");
      const y = TOP + step * ROW;
      rows.append(svg("rect", { class: classes.join(" "), "data-step": step, x: 0, y, width, height: ROW }));
      const node = byStep[step];
      const label = `${step} #${node.node} ${node.name}`;
      const prefix = `${step} #${node.node} `;
      const text = svg("text", { class: "row-label", x: 6, y: y + 13 }, prefix + tail(node.name, 44 - prefix.length));
      text.append(svg("title", {}, `${label} (${node.op}, ${node.kernel})${banded.has(step) ? ": in bands" : ""}`));
      rows.append(text);
    }
    plan.append(rows);
    const axis = svg("g", { class: "axis" });
    for (const [value, text] of ticks(arena, Math.max(4, Math.floor(plotWidth / 90)))) {
      axis.append(svg("line", { x1: x(value), x2: x(value), y1: TOP - 4, y2: TOP + ROW * steps }));
      if (x(arena) - x(value) > 60 || value === 0) axis.append(svg("text", { x: x(value) + 2, y: TOP - 8 }, text));
    }
    axis.append(svg("line", { class: "arena-edge", x1: x(arena), x2: x(arena), y1: TOP - 14, y2: TOP + ROW * steps }));
    axis.append(svg("text", { x: x(arena) + 4, y: TOP - 8 }, `arena ${bytes(report.arena_bytes)}`));
    plan.append(axis);
    const tensors = svg("g", { class: "tensors" });
    drawnTensors = 0;
    report.tensors.forEach((tensor, index) => {
      const classes = ["tensor"];
      if (tensor.placement.startsWith("in place")) classes.push("inplace");
      if (tensor.placement.startsWith("alias")) classes.push("alias");
      if (tensor.role === "scratch") classes.push("scratch");
      if (tensor.role === "input") classes.push("input");
      const producer = tensor.producer === null ? "input" : byStep[tensor.producer].op;
      const rect = svg("rect", {
        class: classes.join(" "), "data-index": index,
        x: x(tensor.offset), y: TOP + tensor.first * ROW + 2,
        width: Math.max(1.5, x(tensor.offset + tensor.bytes) - x(tensor.offset)),
        height: (tensor.last - tensor.first + 1) * ROW - 4, rx: 2,
        fill: `hsl(${hue(producer)},55%,62%)`,
      });
      rect.append(svg("title", {}, tensorTip(tensor).join("\n")));
      tensors.append(rect);
      drawnTensors++;
    });
    plan.append(tensors);
    const peakY = TOP + report.peak.step * ROW;
    const marker = svg("g", { class: "peak-marker", "data-step": report.peak.step });
    marker.append(svg("line", { class: "peak-line", x1: LABEL - 4, x2: width - 6, y1: peakY + ROW / 2, y2: peakY + ROW / 2 }));
    marker.append(svg("text", { class: "peak-label", x: x(arena) + 4, y: peakY + 13 }, `◀ peak ${bytes(report.peak.bytes)}`));
    plan.insertBefore(marker, tensors);
  }

  function planHints() {
    const bands = report.bands.map((b) => `nodes ${b.nodes.map((n) => "#" + n).join(", ")} in bands of ${b.rows} rows`);
    document.getElementById("plan-hint").textContent =
      "One row per node in evaluation order; the arena runs left to right. Each tensor is a rectangle from the " +
      "node that makes it to the last node that reads it, at its offset. A tensor written over an input that " +
      "dies at the same node overlaps it on that row. Hover a tensor for its details." +
      (bands.length ? ` Hatched rows run in bands: ${bands.join("; ")}.` : "");
    const legend = document.getElementById("legend");
    const items = [["arena: bytes of its own", "background:hsl(200,55%,62%)"],
      ["in place over a dying input", "background:hsl(200,55%,62%);border:2px solid #1c4f82"],
      ["alias (same bytes, another shape)", "background:hsla(200,55%,62%,.35);border-style:dashed"],
      ["scratch", "background:repeating-linear-gradient(45deg,#eef1f4 0 3px,#8a96a3 3px 5px)"],
      ["peak step", "background:rgba(217,72,15,.18);border-color:#d9480f"]];
    if (report.bands.length) items.push(["row in bands", "background:repeating-linear-gradient(-45deg,#fff7e0 0 4px,#f0d48a 4px 7px)"]);
    for (const [label, style] of items) legend.append(el("span", {}, el("i", { style }), label));
  }

  // hover: a floating tip (text only) and the rows of the tensor's producer and consumers
  const tip = document.getElementById("tip");
  plan.addEventListener("mousemove", (event) => {
    const target = event.target.closest(".tensor");
    plan.querySelectorAll(".row-bg.hover").forEach((row) => row.classList.remove("hover"));
    if (!target) { tip.hidden = true; return; }
    const tensor = report.tensors[+target.dataset.index];
    const lines = tensorTip(tensor);
    tip.replaceChildren(el("b", {}, lines[0]), ...lines.slice(1).map((line) => el("div", {}, line)));
    tip.hidden = false;
    tip.style.left = `${Math.min(event.clientX + 14, window.innerWidth - 470)}px`;
    tip.style.top = `${Math.min(event.clientY + 14, window.innerHeight - tip.offsetHeight - 8)}px`;
    for (const step of [tensor.producer, ...tensor.consumers]) {
      const row = plan.querySelector(`.row-bg[data-step="${step}"]`);
      if (row) row.classList.add("hover");
    }
  });
  plan.addEventListener("mouseleave", () => { tip.hidden = true; });

  // layer table ---------------------------------------------------------------------------------
  const columns = [
    ["step", "step", true], ["node", "#", true], ["name", "name", false], ["op", "op", false], ["kernel", "kernel", false],
    ["macs", "MACs", true], ["weights", "weight B", true], ["out", "output B", true], ["offset", "offset", true],
    ["placement", "placement", false],
  ];
  if (check) columns.push(["count", check.counted.startsWith("cycles") ? "cycles" : "instructions", true],
    ["per_mac", "per MAC", true]);
  const rows = byStep.map((node) => {
    const layer = layerOf.get(node.step);
    const offsets = node.outputs.map((o) => o.offset).filter((o) => o !== null);
    return {
      step: node.step, node: node.node, name: node.name, op: node.op, kernel: node.kernel, macs: node.macs,
      weights: node.constants_bytes, out: node.outputs.reduce((sum, o) => sum + o.bytes, 0),
      offset: offsets.length ? Math.min(...offsets) : null, placement: node.outputs.map((o) => o.placement).join(", "),
      count: layer ? layer.count : null, per_mac: layer ? layer.per_mac : null,
    };
  });
  let order = { key: "step", descending: false };

  function cellText(row, key) {
    const value = row[key];
    if (value === null || value === undefined) return "";
    if (key === "per_mac") return value.toFixed(2);
    if (key === "name") return tail(value, 56);
    return typeof value === "number" ? grouped(value) : value;
  }

  function drawTable() {
    const layers = document.getElementById("layers");
    const head = el("tr", {});
    for (const [key, title, numeric] of columns) {
      const th = el("th", { "data-key": key, class: numeric ? "num" : "", scope: "col" }, title);
      if (order.key === key) th.setAttribute("aria-sort", order.descending ? "descending" : "ascending");
      head.append(th);
    }
    layers.tHead.replaceChildren(head);
    const sorted = rows.slice().sort((a, b) => {
      const u = a[order.key], v = b[order.key];
      if (u === null || u === undefined) return (v === null || v === undefined) ? a.step - b.step : 1;
      if (v === null || v === undefined) return -1;
      const c = typeof u === "number" ? u - v : String(u).localeCompare(String(v));
      return (order.descending ? -c : c) || a.step - b.step;
    });
    layers.tBodies[0].replaceChildren(...sorted.map((row) => {
      const tr = el("tr", { "data-step": row.step, class: row.step === report.peak.step ? "peak" : "" });
      for (const [key, , numeric] of columns) {
        const td = el("td", { class: (numeric ? "num " : "") + key }, cellText(row, key));
        if (key === "name") td.setAttribute("title", row.name);
        tr.append(td);
      }
      return tr;
    }));
  }
  function sortBy(key, descending) {
    order = { key, descending: descending === undefined ? (order.key === key ? !order.descending : key !== "step" &&
      columns.find((c) => c[0] === key)[2]) : descending };
    drawTable();
  }
  document.getElementById("layers").tHead.addEventListener("click", (event) => {
    const th = event.target.closest("th");
    if (th) sortBy(th.dataset.key);
  });
  document.getElementById("layers").tBodies[0].addEventListener("mouseover", (event) => {
    const tr = event.target.closest("tr");
    plan.querySelectorAll(".row-bg.hover").forEach((row) => row.classList.remove("hover"));
    const row = tr && plan.querySelector(`.row-bg[data-step="${tr.dataset.step}"]`);
    if (row) row.classList.add("hover");
  });

  // state ---------------------------------------------------------------------------------------
  function drawState() {
    if (!report.state.length) return;
    document.getElementById("state-section").hidden = false;
    const macros = report.macros;
    document.getElementById("state-hint").textContent = (macros.PULSE !== undefined ?
      `A streaming model: each invoke consumes ${macros.PULSE} frame${macros.PULSE === 1 ? "" : "s"}; its outputs lag ` +
      `${macros.DELAY} frame${macros.DELAY === 1 ? "" : "s"} behind. Delay lines are ring buffers in the context. ` : "") +
      `Kept in the context across invocations, apart from the arena: ${bytes(report.state_bytes)} in all.`;
    const state = document.getElementById("state");
    state.tHead.replaceChildren(el("tr", {}, el("th", {}, "buffer"), el("th", {}, "type"),
      el("th", { class: "num" }, "elements"), el("th", { class: "num" }, "bytes")));
    state.tBodies[0].replaceChildren(...report.state.map((field) => el("tr", {}, el("td", {}, field.var),
      el("td", {}, field.dtype), el("td", { class: "num" }, grouped(field.count)), el("td", { class: "num" }, grouped(field.bytes)))));
  }

  // page ----------------------------------------------------------------------------------------
  document.getElementById("title").textContent = `${report.name}: compile report`;
  document.getElementById("subtitle").textContent = [data.origin, `target ${report.target}`,
    check ? `verified on ${check.board}` : null, `${report.nodes.length} nodes`, `${report.tensors.length} tensors in the arena`]
    .filter(Boolean).join(" · ");
  summary();
  planHints();
  drawPlan();
  drawTable();
  drawState();
  let resizing = null;
  window.addEventListener("resize", () => { clearTimeout(resizing); resizing = setTimeout(drawPlan, 100); });

  window.tractileReport = {
    errors,
    tensorsDrawn: () => plan.querySelectorAll("rect.tensor").length,
    drawnCount: () => drawnTensors,
    peakStep: () => +plan.querySelector(".peak-marker").dataset.step,
    peakRow: () => +plan.querySelector(".row-bg.peak").dataset.step,
    sortBy,
    tableColumn: (key) => [...document.querySelectorAll(`#layers tbody td.${key}`)].map((td) => td.textContent),
  };
})();
