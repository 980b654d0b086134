// The replay viewer's script (envs/rendering/viewer.py inlines this file after
// battle_draw.js, which draws). It reads the battle from the JSON block #replay-data, draws
// the map once, then each step's units, fire and melee over it, and each side's strength
// and morale under it. window.viewer exposes the state (current step, units in canvas
// pixels) and controls.
(function () {
  "use strict";

  const { rgb, decode, sizeCanvas, painter, legend } = window.BattleDraw;
  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const style = data.style;
  const nSteps = data.nSteps;
  const nUnits = data.nUnits;
  const BASE_MAP_PX = { width: 900, height: 640 };
  const CHART_HEIGHT = 170;
  const FIRE_TRAIL = 3; // steps a volley stays on screen, fading

  // ---- data -----------------------------------------------------------------------
  const tr = {};
  for (const name of Object.keys(data.tracks)) tr[name] = decode(data.tracks[name]);
  const grid = {
    rows: data.grid.rows, cols: data.grid.cols,
    elevation: decode(data.grid.elevation), cover: decode(data.grid.cover),
    going: decode(data.grid.going),
  };
  const at = (t, u) => t * nUnits + u;
  const melee = []; // per step, a list of [i, j]
  for (let t = 0; t <= nSteps; t++) melee.push([]);
  for (let k = 0; k + 2 < data.melee.length; k += 3) {
    melee[data.melee[k]].push([data.melee[k + 1], data.melee[k + 2]]);
  }

  // Each side's mean strength and morale at every step, for the chart and the status line.
  const sides = [0, 1].map((team) => {
    const members = [];
    for (let u = 0; u < nUnits; u++) if (data.team[u] === team) members.push(u);
    const strength = new Float32Array(nSteps + 1), morale = new Float32Array(nSteps + 1);
    const broken = new Int32Array(nSteps + 1);
    for (let t = 0; t <= nSteps; t++) {
      let s = 0, m = 0, b = 0;
      for (const u of members) {
        s += tr.strength[at(t, u)]; m += tr.morale[at(t, u)];
        b += tr.routed[at(t, u)] || tr.destroyed[at(t, u)] ? 1 : 0;
      }
      const n = Math.max(members.length, 1);
      strength[t] = s / n; morale[t] = m / n; broken[t] = b;
    }
    return { team, members, strength, morale, broken };
  });

  // ---- layout and terrain (drawn once) ------------------------------------------------
  const mapCanvas = document.getElementById("map");
  const chartCanvas = document.getElementById("chart");
  const draw = painter(mapCanvas, { width: data.width, height: data.height, grid, style,
                                    unitScale: data.unitScale }, BASE_MAP_PX);
  const { W, H, dpr, toPx } = draw;
  const chart = sizeCanvas(chartCanvas, W, CHART_HEIGHT, dpr);
  for (const element of document.querySelectorAll("header, main")) element.style.width = W + 2 + "px";

  // ---- units ------------------------------------------------------------------------
  function unitAt(t, u) {
    const k = at(t, u);
    const [cx, cy] = toPx(tr.x[k], tr.y[k]);
    return {
      index: u, team: data.team[u], arm: data.arm[u], formation: tr.formation[k],
      armName: data.names.arms[data.arm[u]] || "unit",
      formationName: data.names.formations[tr.formation[k]] || "",
      mapX: tr.x[k], mapY: tr.y[k], theta: tr.theta[k], x: cx, y: cy,
      strength: tr.strength[k], morale: tr.morale[k], readiness: tr.readiness[k],
      routed: tr.routed[k] === 1, destroyed: tr.destroyed[k] === 1,
      volley: tr.volley[k], target: tr.target[k],
    };
  }
  function fireAt(t) {
    const shots = [];
    for (let u = 0; u < nUnits; u++) {
      const k = at(t, u);
      if (tr.volley[k] > 1e-3 && tr.target[k] >= 0 && tr.target[k] < nUnits) {
        shots.push([u, tr.target[k], tr.volley[k]]);
      }
    }
    return shots;
  }

  function drawFire(t) {
    for (let back = FIRE_TRAIL - 1; back >= 0; back--) {
      const s = t - back;
      if (s < 1) continue;
      for (const [shooter, target, volley] of fireAt(s)) {
        // Drawn between the positions of the current step: a fading trail stays on
        // the units it joins.
        draw.shot(toPx(tr.x[at(t, shooter)], tr.y[at(t, shooter)]),
                  toPx(tr.x[at(t, target)], tr.y[at(t, target)]), volley,
                  data.arm[shooter] === style.arms.artillery, 1 - back / FIRE_TRAIL, back === 0);
      }
    }
  }

  function drawMelee(t) {
    for (const [i, j] of melee[t]) {
      draw.melee(toPx(tr.x[at(t, i)], tr.y[at(t, i)]), toPx(tr.x[at(t, j)], tr.y[at(t, j)]));
    }
  }

  function drawMap(t) {
    draw.clear();
    drawFire(t);
    const units = [];
    for (let u = 0; u < nUnits; u++) units.push(unitAt(t, u));
    // The fallen underneath, the fighting on top.
    const rank = (u) => (u.destroyed ? 0 : u.routed ? 1 : 2);
    units.sort((a, b) => rank(a) - rank(b) || a.index - b.index);
    // Routed units are named in a small battle; in a big one the labels would cover
    // each other.
    for (const unit of units) draw.unit(unit, nUnits <= 8);
    drawMelee(t);
  }

  // ---- chart ------------------------------------------------------------------------
  const pad = { left: 40, right: 10, top: 22, bottom: 22 };
  const plotW = W - pad.left - pad.right, plotH = CHART_HEIGHT - pad.top - pad.bottom;
  const chartX = (t) => pad.left + (nSteps > 0 ? (t / nSteps) * plotW : 0);
  const chartY = (v) => pad.top + (1 - v) * plotH;
  function chartBackground() {
    const canvas = document.createElement("canvas");
    canvas.width = chartCanvas.width; canvas.height = chartCanvas.height;
    const c = canvas.getContext("2d");
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.fillStyle = "#fff"; c.fillRect(0, 0, W, CHART_HEIGHT);
    c.font = "11px system-ui, sans-serif"; c.fillStyle = "#55534c";
    c.strokeStyle = "#e3e1d8"; c.lineWidth = 1;
    c.textAlign = "right"; c.textBaseline = "middle";
    for (const v of [0, 0.25, 0.5, 0.75, 1]) {
      c.beginPath(); c.moveTo(pad.left, chartY(v)); c.lineTo(W - pad.right, chartY(v)); c.stroke();
      c.fillText(Math.round(v * 100) + "%", pad.left - 5, chartY(v));
    }
    c.textAlign = "center"; c.textBaseline = "top";
    const tick = niceTick(nSteps);
    for (let t = 0; t <= nSteps; t += tick) c.fillText(String(t), chartX(t), CHART_HEIGHT - pad.bottom + 5);
    for (const side of sides) {
      if (!side.members.length) continue;
      for (const [series, dash] of [[side.strength, []], [side.morale, [5, 4]]]) {
        c.strokeStyle = rgb(style.team[side.team]); c.lineWidth = 2; c.setLineDash(dash);
        c.beginPath();
        for (let t = 0; t <= nSteps; t++) c.lineTo(chartX(t), chartY(series[t]));
        c.stroke();
      }
    }
    c.setLineDash([]);
    c.textAlign = "left"; c.textBaseline = "middle"; c.fillStyle = "#43413a";
    c.fillText("each side's mean:  —— strength   - - - morale", pad.left, pad.top / 2);
    return canvas;
  }
  function niceTick(n) {
    const raw = Math.max(n / 8, 1), p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  const chartImage = chartBackground();
  function drawChart(t) {
    chart.clearRect(0, 0, W, CHART_HEIGHT);
    chart.drawImage(chartImage, 0, 0, W, CHART_HEIGHT);
    const x = chartX(t);
    chart.strokeStyle = "rgb(20,20,20)"; chart.lineWidth = 1.5;
    chart.beginPath(); chart.moveTo(x, pad.top); chart.lineTo(x, pad.top + plotH); chart.stroke();
    for (const side of sides) {
      if (!side.members.length) continue;
      chart.fillStyle = rgb(style.team[side.team]);
      for (const series of [side.strength, side.morale]) {
        chart.beginPath(); chart.arc(x, chartY(series[t]), 3.5, 0, 2 * Math.PI); chart.fill();
      }
    }
  }

  // ---- controls and playback ------------------------------------------------------------
  const playButton = document.getElementById("play");
  const scrubber = document.getElementById("scrubber");
  const counter = document.getElementById("counter");
  const speedSelect = document.getElementById("speed");
  const statusLine = document.getElementById("status");
  const tooltip = document.getElementById("tooltip");
  scrubber.max = String(nSteps);
  let step = 0, playing = false, speed = Number(speedSelect.value), carry = 0, last = null;

  function render() {
    drawMap(step);
    drawChart(step);
    scrubber.value = String(step);
    counter.textContent = `step ${step} / ${nSteps}`;
    statusLine.textContent = sides.filter((s) => s.members.length).map((s) =>
      `${data.names.teams[s.team]}: ${s.members.length} unit${s.members.length > 1 ? "s" : ""}, ` +
      `strength ${Math.round(100 * s.strength[step])}%, morale ${Math.round(100 * s.morale[step])}%` +
      (s.broken[step] ? `, ${s.broken[step]} broken` : "")).join("   |   ");
  }
  function seek(t) {
    const n = Math.round(Number(t));
    step = Math.min(Math.max(Number.isFinite(n) ? n : 0, 0), nSteps);
    render();
    return step;
  }
  function setPlaying(on) {
    playing = on && nSteps > 0;
    playButton.textContent = playing ? "Pause" : "Play";
    last = null; carry = 0;
    if (playing) requestAnimationFrame(tick);
  }
  function play() { if (step >= nSteps) seek(0); setPlaying(true); }
  function pause() { setPlaying(false); }
  function tick(now) {
    if (!playing) return;
    if (last !== null) {
      carry += ((now - last) / 1000) * speed;
      const advance = Math.floor(carry);
      if (advance > 0) {
        carry -= advance;
        seek(step + advance);
        if (step >= nSteps) { setPlaying(false); return; }
      }
    }
    last = now;
    requestAnimationFrame(tick);
  }
  playButton.addEventListener("click", () => (playing ? pause() : play()));
  scrubber.addEventListener("input", () => seek(scrubber.value));
  speedSelect.addEventListener("change", () => { speed = Number(speedSelect.value); });
  function chartSeek(event) {
    const rect = chartCanvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    seek(((x - pad.left) / plotW) * nSteps);
  }
  chartCanvas.addEventListener("mousedown", (event) => {
    chartSeek(event);
    const move = (e) => chartSeek(e);
    const up = () => { window.removeEventListener("mousemove", move); window.removeEventListener("mouseup", up); };
    window.addEventListener("mousemove", move); window.addEventListener("mouseup", up);
  });
  document.addEventListener("keydown", (event) => {
    const tag = event.target && event.target.tagName;
    if (tag === "SELECT" || (tag === "INPUT" && event.key !== " ")) return;
    if (event.key === " ") { event.preventDefault(); playing ? pause() : play(); }
    else if (event.key === "ArrowRight") { pause(); seek(step + (event.shiftKey ? 10 : 1)); }
    else if (event.key === "ArrowLeft") { pause(); seek(step - (event.shiftKey ? 10 : 1)); }
    else if (event.key === "Home") { pause(); seek(0); }
    else if (event.key === "End") { pause(); seek(nSteps); }
  });
  mapCanvas.addEventListener("mousemove", (event) => {
    const rect = mapCanvas.getBoundingClientRect();
    const mx = event.clientX - rect.left, my = event.clientY - rect.top;
    let best = null, bestD = 20;
    for (let u = 0; u < nUnits; u++) {
      const unit = unitAt(step, u), d = Math.hypot(unit.x - mx, unit.y - my);
      if (d < bestD) { best = unit; bestD = d; }
    }
    if (!best) { tooltip.hidden = true; return; }
    const state = best.destroyed ? "destroyed" : best.routed ? "routed" : "in the fight";
    tooltip.textContent =
      `${data.names.teams[best.team]} ${best.armName} #${best.index} (${best.formationName})\n` +
      `strength ${Math.round(100 * best.strength)}%  morale ${Math.round(100 * best.morale)}%\n` +
      `readiness ${Math.round(100 * best.readiness)}%  ${state}`;
    tooltip.style.left = Math.min(mx + 12, W - 180) + "px";
    tooltip.style.top = Math.min(my + 12, H - 60) + "px";
    tooltip.hidden = false;
  });
  mapCanvas.addEventListener("mouseleave", () => { tooltip.hidden = true; });

  // ---- notes and legend ---------------------------------------------------------------
  const notes = Object.entries(data.metadata || {})
    .map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`);
  notes.push(`map ${data.width} m × ${data.height} m`, `${nUnits} units`, `${nSteps} steps`);
  document.getElementById("notes").textContent = notes.join("  ·  ");
  legend(document.getElementById("legend"), style, dpr);

  // ---- the API the tests and the screenshot script use ----------------------------------
  window.viewer = {
    nSteps, nUnits,
    canvas: { width: W, height: H },
    seek, play, pause,
    setSpeed(stepsPerSecond) {
      speed = Math.max(Number(stepsPerSecond) || 1, 0.1);
      speedSelect.value = String(speed);
      return speed;
    },
    state() {
      const units = [];
      for (let u = 0; u < nUnits; u++) units.push(unitAt(step, u));
      return {
        step, nSteps, playing, speed, canvas: { width: W, height: H }, units,
        fire: fireAt(step).map(([s, t]) => [s, t]), melee: melee[step].map((p) => p.slice()),
        sides: sides.map((s) => ({ team: s.team, units: s.members.length,
                                   strength: s.strength[step], morale: s.morale[step],
                                   broken: s.broken[step] })),
      };
    },
  };
  render();
  document.body.dataset.ready = "true";
})();
