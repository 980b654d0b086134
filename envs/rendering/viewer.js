// The replay viewer's script (envs/rendering/viewer.py inlines this file).
// It reads the battle from the JSON block #replay-data, draws the map once, then each
// step's units, fire and melee over it, and each side's strength and morale under it.
// window.viewer exposes the state (current step, units in canvas pixels) and controls.
(function () {
  "use strict";

  const data = JSON.parse(document.getElementById("replay-data").textContent);
  const style = data.style;
  const nSteps = data.nSteps;
  const nUnits = data.nUnits;
  const BASE_MAP_PX = { width: 900, height: 640 };
  const CHART_HEIGHT = 170;
  const FIRE_TRAIL = 3; // steps a volley stays on screen, fading

  // ---- data -----------------------------------------------------------------------
  function decode(spec) {
    const text = atob(spec.data);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    switch (spec.dtype) {
      case "f4": return new Float32Array(bytes.buffer);
      case "u1": return bytes;
      case "i1": return new Int8Array(bytes.buffer);
      case "u2": {
        const raw = new Uint16Array(bytes.buffer);
        const out = new Float32Array(raw.length);
        for (let i = 0; i < raw.length; i++) out[i] = raw[i] / 65535;
        return out;
      }
      default: throw new Error("unknown dtype " + spec.dtype);
    }
  }
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
  const shapes = new Map(style.shapes.map(([a, f, front, depth]) => [a + ":" + f, [front, depth]]));
  const hollowSet = new Set(style.hollow.map(([a, f]) => a + ":" + f));
  const rgb = (c, alpha) => alpha === undefined
    ? `rgb(${c[0]},${c[1]},${c[2]})` : `rgba(${c[0]},${c[1]},${c[2]},${alpha})`;

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

  // ---- layout -----------------------------------------------------------------------
  const mapCanvas = document.getElementById("map");
  const chartCanvas = document.getElementById("chart");
  const scale = Math.min(BASE_MAP_PX.width / data.width, BASE_MAP_PX.height / data.height);
  const W = Math.round(data.width * scale), H = Math.round(data.height * scale);
  const pxPerM = W / data.width, pyPerM = H / data.height;
  const dpr = Math.max(1, Math.min(window.devicePixelRatio || 1, 3));
  function sizeCanvas(canvas, w, h) {
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
    canvas.style.width = w + "px"; canvas.style.height = h + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }
  const map = sizeCanvas(mapCanvas, W, H);
  const chart = sizeCanvas(chartCanvas, W, CHART_HEIGHT);
  for (const element of document.querySelectorAll("header, main")) element.style.width = W + 2 + "px";
  const toPx = (x, y) => [x * pxPerM, H - y * pyPerM];

  // ---- terrain, drawn once ------------------------------------------------------------
  function sampler(values) {
    // Bilinear, cell-centred (as the simulator's and the GIF's maps); row 0 is the south.
    const { rows, cols } = grid;
    return (gx, gy) => {
      const x = Math.min(Math.max(gx, 0), cols - 1), y = Math.min(Math.max(gy, 0), rows - 1);
      const x0 = Math.floor(x), y0 = Math.floor(y);
      const x1 = Math.min(x0 + 1, cols - 1), y1 = Math.min(y0 + 1, rows - 1);
      const fx = x - x0, fy = y - y0;
      const v00 = values[y0 * cols + x0], v01 = values[y0 * cols + x1];
      const v10 = values[y1 * cols + x0], v11 = values[y1 * cols + x1];
      return (v00 * (1 - fx) + v01 * fx) * (1 - fy) + (v10 * (1 - fx) + v11 * fx) * fy;
    };
  }
  function terrain() {
    const { rows, cols } = grid;
    let lo = Infinity, hi = -Infinity;
    for (const v of grid.elevation) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    // Elevation is a fraction of the highest hill in the simulator's maps; anything
    // else is stretched to [0, 1].
    const norm = lo >= 0 && hi <= 1 ? (v) => v : (v) => (hi > lo ? (v - lo) / (hi - lo) : 0);
    const e = Float32Array.from(grid.elevation, norm);
    // Slopes per cell (central differences), interpolated: smooth light, no facets.
    const gx = new Float32Array(rows * cols), gy = new Float32Array(rows * cols);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const l = e[r * cols + Math.max(c - 1, 0)], rr = e[r * cols + Math.min(c + 1, cols - 1)];
        const d = e[Math.max(r - 1, 0) * cols + c], u = e[Math.min(r + 1, rows - 1) * cols + c];
        gx[r * cols + c] = (rr - l) / (Math.min(c + 1, cols - 1) - Math.max(c - 1, 0) || 1);
        gy[r * cols + c] = (u - d) / (Math.min(r + 1, rows - 1) - Math.max(r - 1, 0) || 1);
      }
    }
    const elev = sampler(e), cover = sampler(grid.cover), sx = sampler(gx), sy = sampler(gy);
    const pw = mapCanvas.width, ph = mapCanvas.height;
    const image = new ImageData(pw, ph);
    const px = image.data;
    const bands = new Float32Array(pw * ph);
    const cellsPerPx = cols / pw, rowsPerPx = rows / ph;
    const relief = 3.0; // vertical exaggeration of the light
    const low = style.lowGround, high = style.highGround, woods = style.woods;
    const water = style.water, road = style.road;
    for (let j = 0; j < ph; j++) {
      const gyc = (ph - j - 0.5) * rowsPerPx - 0.5;
      const row = Math.min(rows - 1, Math.floor((ph - j - 0.5) * rowsPerPx));
      for (let i = 0; i < pw; i++) {
        const gxc = (i + 0.5) * cellsPerPx - 0.5;
        const k = j * pw + i;
        const h = Math.min(Math.max(elev(gxc, gyc), 0), 1);
        const fx = sx(gxc, gyc) * relief, fy = sy(gxc, gyc) * relief;
        // Lambert light from the north-west, high in the sky.
        const light = (fx - fy) / Math.sqrt(1 + fx * fx + fy * fy);
        const shade = Math.min(Math.max(1.0 + 0.55 * light, 0.6), 1.3);
        const w = Math.min(Math.max(cover(gxc, gyc), 0), 1) * 0.75;
        let rgbv = [0, 1, 2].map((n) => ((low[n] * (1 - h) + high[n] * h) * shade) * (1 - w)
          + woods[n] * w);
        // Woods: a stipple of tree crowns.
        if (w > 0.2 && ((i * 7 + j * 13) % 17 === 0 || (i * 5 + j * 11) % 23 === 0)) {
          rgbv = rgbv.map((v) => v * 0.7);
        }
        const going = grid.going[row * cols + Math.min(cols - 1, Math.floor((i + 0.5) * cellsPerPx))];
        if (going <= 0) rgbv = water.slice();
        else if (going < 1) rgbv = rgbv.map((v, n) => v * 0.45 + water[n] * 0.55);
        else if (going > 1) rgbv = rgbv.map((v, n) => v * 0.4 + road[n] * 0.6);
        bands[k] = Math.floor(h * 10);
        px[4 * k] = rgbv[0]; px[4 * k + 1] = rgbv[1]; px[4 * k + 2] = rgbv[2]; px[4 * k + 3] = 255;
      }
    }
    // Contour lines every tenth of the highest hill, every fifth line heavier.
    const line = Math.max(1, Math.round(dpr));
    for (let j = line; j < ph; j++) {
      for (let i = line; i < pw; i++) {
        const k = j * pw + i, b = bands[k];
        const left = bands[k - line], up = bands[k - line * pw];
        if (b !== left || b !== up) {
          const top = Math.max(b, left, up);
          const f = top % 5 === 0 ? 0.55 : 0.78;
          px[4 * k] *= f; px[4 * k + 1] *= f; px[4 * k + 2] *= f;
        }
      }
    }
    const canvas = document.createElement("canvas");
    canvas.width = pw; canvas.height = ph;
    canvas.getContext("2d").putImageData(image, 0, 0);
    return canvas;
  }
  const background = terrain();

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
  function shapeOf(unit) {
    const key = unit.arm + ":" + unit.formation;
    const [front, depth] = shapes.get(key) || style.defaultShape;
    return { front: front * data.unitScale, depth: depth * data.unitScale,
             hollow: hollowSet.has(key) };
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
      const alpha = 1 - back / FIRE_TRAIL;
      for (const [shooter, target, volley] of fireAt(s)) {
        // Drawn between the positions of the current step: a fading trail stays on
        // the units it joins.
        const a = toPx(tr.x[at(t, shooter)], tr.y[at(t, shooter)]);
        const b = toPx(tr.x[at(t, target)], tr.y[at(t, target)]);
        map.save();
        map.strokeStyle = rgb(style.fire, 0.9 * alpha);
        map.lineWidth = 2 + 4 * volley;
        if (data.arm[shooter] === style.arms.artillery) map.setLineDash([7, 4]);
        map.beginPath(); map.moveTo(a[0], a[1]); map.lineTo(b[0], b[1]); map.stroke();
        map.setLineDash([]);
        if (back === 0) {
          // Smoke at the muzzle, a burst on the target.
          map.fillStyle = "rgba(255,255,255,0.8)";
          map.beginPath(); map.arc(a[0], a[1], 3 + 3 * volley, 0, 2 * Math.PI); map.fill();
          map.fillStyle = rgb(style.fire, 0.9);
          map.beginPath(); map.arc(b[0], b[1], 2 + 3 * volley, 0, 2 * Math.PI); map.fill();
        }
        map.restore();
      }
    }
  }

  function drawMelee(t) {
    for (const [i, j] of melee[t]) {
      const a = toPx(tr.x[at(t, i)], tr.y[at(t, i)]);
      const b = toPx(tr.x[at(t, j)], tr.y[at(t, j)]);
      const mx = (a[0] + b[0]) / 2, my = (a[1] + b[1]) / 2;
      const r = 11;
      map.save();
      // A starburst with crossed blades: hand-to-hand fighting.
      map.fillStyle = "rgba(230,60,20,0.9)";
      map.beginPath();
      for (let n = 0; n < 16; n++) {
        const angle = (n * Math.PI) / 8, rad = n % 2 ? r * 0.5 : r;
        map.lineTo(mx + rad * Math.cos(angle), my + rad * Math.sin(angle));
      }
      map.closePath(); map.fill();
      map.strokeStyle = "#fff"; map.lineWidth = 2;
      map.beginPath();
      map.moveTo(mx - 5, my - 5); map.lineTo(mx + 5, my + 5);
      map.moveTo(mx + 5, my - 5); map.lineTo(mx - 5, my + 5);
      map.stroke();
      map.restore();
    }
  }

  function drawUnit(unit) {
    const { front, depth, hollow } = shapeOf(unit);
    const halfFront = 0.5 * front * Math.max(unit.strength, 0.15) * pxPerM;
    const halfDepth = 0.5 * depth * pyPerM;
    const colour = unit.destroyed ? style.destroyed
      : unit.routed ? style.routed[unit.team] : style.team[unit.team];
    map.save();
    map.translate(unit.x, unit.y);
    map.rotate(-unit.theta); // map angles turn anticlockwise, the canvas's y points down
    // Local frame: +x is the unit's facing, y runs along its front.
    map.lineJoin = "round";
    if (unit.routed && !unit.destroyed) map.setLineDash([4, 3]);
    map.beginPath();
    map.rect(-halfDepth, -halfFront, 2 * halfDepth, 2 * halfFront);
    if (hollow) {
      map.strokeStyle = rgb(colour); map.lineWidth = 3; map.stroke();
    } else {
      map.fillStyle = rgb(colour); map.fill();
      map.strokeStyle = "rgb(20,20,20)"; map.lineWidth = 1; map.stroke();
    }
    map.setLineDash([]);
    if (unit.arm === style.arms.cavalry) {
      // A diagonal stripe, as on a staff map.
      map.strokeStyle = rgb(style.marking); map.lineWidth = 2;
      map.beginPath(); map.moveTo(-halfDepth, -halfFront); map.lineTo(halfDepth, halfFront);
      map.stroke();
    } else if (unit.arm === style.arms.artillery) {
      map.fillStyle = hollow ? rgb(colour) : rgb(style.marking);
      map.beginPath(); map.arc(0, 0, 2.5, 0, 2 * Math.PI); map.fill();
    }
    if (unit.destroyed) {
      map.strokeStyle = "rgb(20,20,20)"; map.lineWidth = 2;
      const r = Math.max(halfFront, halfDepth, 6);
      map.beginPath(); map.moveTo(-r, -r); map.lineTo(r, r); map.moveTo(r, -r); map.lineTo(-r, r);
      map.stroke();
    } else if (!unit.routed) {
      // An arrowhead on the front shows the facing.
      const s = data.unitScale * pxPerM;
      map.fillStyle = rgb(colour); map.strokeStyle = "rgb(20,20,20)"; map.lineWidth = 1;
      map.beginPath();
      map.moveTo(halfDepth + 16 * s, 0); map.lineTo(halfDepth, 9 * s); map.lineTo(halfDepth, -9 * s);
      map.closePath(); map.fill(); map.stroke();
    }
    map.restore();
    if (!unit.destroyed) {
      // Strength (dark) and morale (gold) bars under the unit.
      const bx = unit.x - 15, by = unit.y + 30 * data.unitScale * pyPerM;
      map.fillStyle = "rgba(255,255,255,0.9)"; map.fillRect(bx, by, 30, 7);
      map.fillStyle = "rgb(30,30,30)"; map.fillRect(bx, by, 30 * unit.strength, 3);
      map.fillStyle = "rgb(230,180,40)"; map.fillRect(bx, by + 4, 30 * unit.morale, 3);
    }
    if (unit.routed && !unit.destroyed && nUnits <= 8) {
      // Named in a small battle; in a big one the labels would cover each other.
      map.save();
      map.font = "bold 10px system-ui, sans-serif"; map.textAlign = "center";
      map.fillStyle = "rgb(20,20,20)";
      map.fillText("routed", unit.x, unit.y - Math.max(halfFront, halfDepth) - 4);
      map.restore();
    }
  }

  function drawMap(t) {
    map.clearRect(0, 0, W, H);
    map.drawImage(background, 0, 0, W, H);
    drawFire(t);
    const units = [];
    for (let u = 0; u < nUnits; u++) units.push(unitAt(t, u));
    // The fallen underneath, the fighting on top.
    const rank = (u) => (u.destroyed ? 0 : u.routed ? 1 : 2);
    units.sort((a, b) => rank(a) - rank(b) || a.index - b.index);
    for (const unit of units) drawUnit(unit);
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
  function legendItem(label, paint) {
    const li = document.createElement("li");
    const icon = document.createElement("canvas");
    const ctx = sizeCanvas(icon, 34, 18);
    paint(ctx);
    const span = document.createElement("span");
    span.textContent = label;
    li.append(icon, span);
    document.getElementById("legend").append(li);
  }
  const block = (ctx, colour, hollow, w = 24, h = 8) => {
    ctx.beginPath(); ctx.rect(17 - w / 2, 9 - h / 2, w, h);
    if (hollow) { ctx.strokeStyle = rgb(colour); ctx.lineWidth = 2.5; ctx.stroke(); }
    else { ctx.fillStyle = rgb(colour); ctx.fill(); ctx.strokeStyle = "rgb(20,20,20)"; ctx.lineWidth = 1; ctx.stroke(); }
  };
  legendItem("infantry in line", (c) => block(c, style.team[0], false));
  legendItem("column", (c) => block(c, style.team[0], false, 9, 16));
  legendItem("square", (c) => block(c, style.team[0], true, 13, 13));
  legendItem("cavalry", (c) => {
    block(c, style.team[1], false);
    c.strokeStyle = rgb(style.marking); c.lineWidth = 2;
    c.beginPath(); c.moveTo(5, 5); c.lineTo(29, 13); c.stroke();
  });
  legendItem("guns in battery", (c) => {
    block(c, style.team[1], false, 16, 7);
    c.fillStyle = rgb(style.marking); c.beginPath(); c.arc(17, 9, 2.5, 0, 2 * Math.PI); c.fill();
  });
  legendItem("limbered", (c) => block(c, style.team[1], true, 7, 16));
  legendItem("routed", (c) => { c.setLineDash([4, 3]); block(c, style.routed[0], false); });
  legendItem("destroyed", (c) => {
    block(c, style.destroyed, false);
    c.strokeStyle = "rgb(20,20,20)"; c.lineWidth = 2;
    c.beginPath(); c.moveTo(11, 3); c.lineTo(23, 15); c.moveTo(23, 3); c.lineTo(11, 15); c.stroke();
  });
  legendItem("fire", (c) => {
    c.strokeStyle = rgb(style.fire); c.lineWidth = 3;
    c.beginPath(); c.moveTo(2, 9); c.lineTo(32, 9); c.stroke();
  });
  legendItem("melee", (c) => {
    c.fillStyle = "rgba(230,60,20,0.9)"; c.beginPath();
    for (let n = 0; n < 16; n++) {
      const a = (n * Math.PI) / 8, r = n % 2 ? 4 : 8;
      c.lineTo(17 + r * Math.cos(a), 9 + r * Math.sin(a));
    }
    c.closePath(); c.fill();
  });

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
