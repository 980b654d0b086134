// The play page's script (envs/play/server.py serves it after battle_draw.js, which draws).
// It asks the server for the battle's map once (/api/battle) and for the battle as it stands
// (/api/state) several times a second, draws it as the replay viewer does, and sends the
// person's orders (/api/order) and clock commands (/api/clock). Click one of Blue's units to
// select it; then a click on the map orders it there (or, in "face" mode or with the right
// button, to face that way). window.play exposes the state and the drawing's geometry.
(function () {
  "use strict";

  const { rgb, decode, painter, legend } = window.BattleDraw;
  const BASE_MAP_PX = { width: 900, height: 640 };
  const FIRE_TRAIL = 3; // steps a volley stays on screen, fading
  const POLL_MS = 100;
  const PICK_PX = 18; // a click this close to a unit's centre selects it
  const token = document.body.dataset.token;
  const mapCanvas = document.getElementById("map");
  const message = document.getElementById("message");
  let battle = null, state = null, draw = null, selected = null, mode = "move";
  const trail = []; // the last FIRE_TRAIL steps' shots, newest last

  async function api(method, path, body) {
    const init = { method, cache: "no-store", headers: {} };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.headers["X-Play-Token"] = token;
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    const data = await response.json();
    if (!response.ok) throw new Error(data.error || response.statusText);
    return data;
  }

  function say(text) { message.textContent = text; }

  // ---- the battle as it stands ---------------------------------------------------------
  function unitAt(u) {
    const s = state.units[u];
    const [x, y] = draw.toPx(s.x, s.y);
    return {
      index: u, team: battle.team[u], arm: battle.arm[u], formation: s.formation,
      armName: battle.names.arms[battle.arm[u]] || "unit",
      formationName: battle.names.formations[s.formation] || "",
      mapX: s.x, mapY: s.y, theta: s.theta, x, y, strength: s.strength, morale: s.morale,
      readiness: s.readiness, routed: s.routed, destroyed: s.destroyed,
    };
  }
  const inFight = (u) => !state.units[u].routed && !state.units[u].destroyed;

  function drawOrders(u) {
    const orders = state.orders[String(u)];
    if (!orders) return;
    const ctx = draw.ctx, unit = unitAt(u);
    let end = [unit.x, unit.y];
    ctx.save();
    ctx.strokeStyle = rgb(battle.style.team[0]); ctx.lineWidth = 1.5;
    if (orders.move) {
      end = draw.toPx(orders.move[0], orders.move[1]);
      ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(unit.x, unit.y); ctx.lineTo(end[0], end[1]); ctx.stroke();
      ctx.setLineDash([]);
      ctx.beginPath(); ctx.arc(end[0], end[1], 5, 0, 2 * Math.PI); ctx.stroke();
    }
    if (orders.face !== null) {
      // The heading it will take once it stands, from where it will stand.
      const dx = 22 * Math.cos(orders.face), dy = -22 * Math.sin(orders.face);
      ctx.beginPath(); ctx.moveTo(end[0], end[1]); ctx.lineTo(end[0] + dx, end[1] + dy); ctx.stroke();
      ctx.beginPath(); ctx.arc(end[0] + dx, end[1] + dy, 2.5, 0, 2 * Math.PI); ctx.fill();
    }
    ctx.restore();
  }

  function render() {
    draw.clear();
    const n = state.units.length;
    trail.forEach((shots, k) => {
      const back = trail.length - 1 - k;
      for (const [shooter, target, volley] of shots) {
        const a = state.units[shooter], b = state.units[target];
        draw.shot(draw.toPx(a.x, a.y), draw.toPx(b.x, b.y), volley,
                  battle.arm[shooter] === battle.style.arms.artillery,
                  1 - back / FIRE_TRAIL, back === 0);
      }
    });
    const units = [];
    for (let u = 0; u < n; u++) units.push(unitAt(u));
    const rank = (u) => (u.destroyed ? 0 : u.routed ? 1 : 2);
    units.sort((a, b) => rank(a) - rank(b) || a.index - b.index);
    for (const unit of units) draw.unit(unit, n <= 8);
    for (const u of battle.blueUnits) if (inFight(u)) drawOrders(u);
    if (selected !== null) {
      const unit = unitAt(selected), ctx = draw.ctx;
      ctx.save(); ctx.strokeStyle = "rgb(255,215,0)"; ctx.lineWidth = 2.5;
      ctx.beginPath(); ctx.arc(unit.x, unit.y, PICK_PX, 0, 2 * Math.PI); ctx.stroke();
      ctx.restore();
    }
    document.getElementById("counter").textContent = `step ${state.step} / ${state.maxSteps}`;
    document.getElementById("run").textContent = state.running ? "Pause" : "Run";
    for (const id of ["run", "step"]) document.getElementById(id).disabled = state.over;
    document.getElementById("status").textContent = state.sides.map((s, team) =>
      `${battle.names.teams[team]}: ${s.units} unit${s.units > 1 ? "s" : ""}, ` +
      `strength ${Math.round(100 * s.strength)}%, morale ${Math.round(100 * s.morale)}%` +
      (s.broken ? `, ${s.broken} broken` : "")).join("   |   ");
    if (state.error) say(state.error);
    showSelected();
    showResult();
  }

  function showSelected() {
    const panel = document.getElementById("selected");
    const formation = document.getElementById("formation");
    if (selected === null || !inFight(selected) || state.over) {
      if (selected !== null && !inFight(selected)) selected = null;
      panel.textContent = state.over ? "the battle is over" : "click one of Blue's units";
      formation.disabled = true;
      return;
    }
    const unit = unitAt(selected), orders = state.orders[String(selected)];
    panel.textContent = `Blue ${unit.armName} #${selected} (${unit.formationName}), ` +
      `strength ${Math.round(100 * unit.strength)}%, morale ${Math.round(100 * unit.morale)}%` +
      `, ${orders.fire ? "fire at will" : "holding fire"}`;
    const allowed = battle.armFormations[unit.arm];
    if (formation.dataset.arm !== String(unit.arm)) {
      formation.replaceChildren(...allowed.map((name) => new Option(name, name)));
      formation.dataset.arm = String(unit.arm);
    }
    formation.value = orders.formation || unit.formationName;
    formation.disabled = false;
  }

  function showResult() {
    const box = document.getElementById("result");
    if (!state.result) { box.hidden = true; return; }
    const r = state.result;
    const verdict = r.outcome === "blue" ? "Blue won" : r.outcome === "red" ? "Red won" : "A draw";
    const notes = Object.entries(r.notes || {}).map(([k, v]) => `${k}: ${v}`);
    box.textContent = [`${verdict} after ${r.steps} steps.`, `Replay: ${r.replay}`,
                       `Viewer page: ${r.page}`, ...notes].join("\n");
    box.hidden = false;
  }

  // ---- talking to the server -------------------------------------------------------------
  function take(next) {
    // Requests run on threads of their own, so an older state can arrive after a newer one.
    if (state !== null && next.revision < state.revision) return;
    if (state === null || next.step !== state.step) {
      trail.push(next.fire);
      while (trail.length > FIRE_TRAIL) trail.shift();
    }
    state = next;
    render();
  }
  async function poll() {
    try {
      take(await api("GET", "/api/state"));
    } catch (error) {
      say("the server does not answer: " + error.message);
    }
    if (!(state && state.over && state.result)) setTimeout(poll, POLL_MS);
  }
  async function order(changes) {
    if (selected === null) return;
    try {
      await api("POST", "/api/order", Object.assign({ unit: selected }, changes));
      say("");
      take(await api("GET", "/api/state"));
    } catch (error) {
      say(error.message);
    }
  }
  async function clock(action) {
    const speed = Number(document.getElementById("speed").value);
    try {
      take(await api("POST", "/api/clock", { action, speed }));
      say("");
    } catch (error) {
      say(error.message);
    }
  }

  // ---- controls ---------------------------------------------------------------------------
  function pointer(event) {
    const rect = mapCanvas.getBoundingClientRect();
    return [event.clientX - rect.left - mapCanvas.clientLeft,
            event.clientY - rect.top - mapCanvas.clientTop];
  }
  function pick(px, py) {
    let best = null, bestD = PICK_PX;
    for (const u of battle.blueUnits) {
      if (!inFight(u)) continue;
      const unit = unitAt(u), d = Math.hypot(unit.x - px, unit.y - py);
      if (d < bestD) { best = u; bestD = d; }
    }
    return best;
  }
  function faceTowards(px, py) {
    const orders = state.orders[String(selected)], unit = state.units[selected];
    const from = orders.move || [unit.x, unit.y];
    const [x, y] = draw.toMap(px, py);
    order({ face: Math.atan2(y - from[1], x - from[0]) });
  }
  function onMapClick(event) {
    if (state === null || state.over) return;
    const [px, py] = pointer(event);
    const hit = pick(px, py);
    if (hit !== null) { selected = hit; render(); return; }
    if (selected === null) { say("click one of Blue's units first"); return; }
    if (mode === "face") { faceTowards(px, py); return; }
    const [x, y] = draw.toMap(px, py);
    order({ move: [Math.min(Math.max(x, 0), battle.width), Math.min(Math.max(y, 0), battle.height)] });
  }

  async function start() {
    battle = await api("GET", "/api/battle");
    const grid = {
      rows: battle.grid.rows, cols: battle.grid.cols, elevation: decode(battle.grid.elevation),
      cover: decode(battle.grid.cover), going: decode(battle.grid.going),
    };
    draw = painter(mapCanvas, { width: battle.width, height: battle.height, grid,
                                style: battle.style, unitScale: battle.unitScale }, BASE_MAP_PX);
    for (const element of document.querySelectorAll("header, main")) {
      element.style.width = draw.W + 2 + "px";
    }
    legend(document.getElementById("legend"), battle.style, draw.dpr);
    mapCanvas.addEventListener("click", onMapClick);
    mapCanvas.addEventListener("contextmenu", (event) => {
      event.preventDefault();
      if (state && !state.over && selected !== null) faceTowards(...pointer(event));
    });
    for (const radio of document.querySelectorAll("input[name=mode]")) {
      radio.addEventListener("change", () => { mode = radio.value; });
    }
    document.getElementById("run").addEventListener("click", () => clock(state.running ? "pause" : "run"));
    document.getElementById("step").addEventListener("click", () => clock("step"));
    document.getElementById("speed").addEventListener("change", () => clock(state.running ? "run" : "pause"));
    document.getElementById("halt").addEventListener("click", () => order({ move: null, face: null }));
    document.getElementById("fire").addEventListener("click", () => order({ fire: true }));
    document.getElementById("hold").addEventListener("click", () => order({ fire: false }));
    document.getElementById("formation").addEventListener("change", (event) => order({ formation: event.target.value }));
    document.addEventListener("keydown", (event) => {
      const tag = event.target && event.target.tagName;
      if (tag === "SELECT" || tag === "INPUT") return;
      if (event.key === " ") { event.preventDefault(); if (!state.over) clock(state.running ? "pause" : "run"); }
      else if (event.key === "Escape") { selected = null; render(); }
    });
    take(await api("GET", "/api/state"));
    setTimeout(poll, POLL_MS);
    document.body.dataset.ready = "true";
  }

  // ---- the API the tests and the screenshot script use -----------------------------------
  window.play = {
    state: () => state,
    selected: () => selected,
    toPx: (x, y) => draw.toPx(x, y),
    canvas: () => ({ width: draw.W, height: draw.H }),
  };
  start().catch((error) => say("the page could not start: " + error.message));
})();
