// Drawing a battle on a canvas, shared by the replay viewer (viewer.js; envs/rendering/viewer.py
// inlines both files) and the play page (envs/play serves both): the map drawn once (shaded
// relief, contour lines, woods, water, fords and roads), units as oriented rectangles as the
// GIFs draw them, fire, melee, and the legend. window.BattleDraw holds it.
(function () {
  "use strict";

  const rgb = (c, alpha) => alpha === undefined
    ? `rgb(${c[0]},${c[1]},${c[2]})` : `rgba(${c[0]},${c[1]},${c[2]},${alpha})`;

  // A typed array of the page's JSON: its dtype code and its little-endian bytes in base64.
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

  function sizeCanvas(canvas, w, h, dpr) {
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
    canvas.style.width = w + "px"; canvas.style.height = h + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  function sampler(grid, values) {
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

  // The terrain at the canvas's pixel size, as an offscreen canvas.
  function terrain(grid, style, pw, ph, dpr) {
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
    const elev = sampler(grid, e), cover = sampler(grid, grid.cover);
    const sx = sampler(grid, gx), sy = sampler(grid, gy);
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

  // A painter of one battle's map on `canvas`, fitted into `box` (CSS pixels). `battle`
  // holds the map's size in metres (width, height), its decoded grid (rows, cols,
  // elevation, cover, going), the drawing conventions (style) and unitScale.
  function painter(canvas, battle, box) {
    const style = battle.style;
    const scale = Math.min(box.width / battle.width, box.height / battle.height);
    const W = Math.round(battle.width * scale), H = Math.round(battle.height * scale);
    const pxPerM = W / battle.width, pyPerM = H / battle.height;
    const dpr = Math.max(1, Math.min(window.devicePixelRatio || 1, 3));
    const map = sizeCanvas(canvas, W, H, dpr);
    const background = terrain(battle.grid, style, canvas.width, canvas.height, dpr);
    const shapes = new Map(style.shapes.map(([a, f, front, depth]) => [a + ":" + f, [front, depth]]));
    const hollowSet = new Set(style.hollow.map(([a, f]) => a + ":" + f));
    const toPx = (x, y) => [x * pxPerM, H - y * pyPerM];
    const toMap = (px, py) => [px / pxPerM, (H - py) / pyPerM];

    function shapeOf(unit) {
      const key = unit.arm + ":" + unit.formation;
      const [front, depth] = shapes.get(key) || style.defaultShape;
      return { front: front * battle.unitScale, depth: depth * battle.unitScale,
               hollow: hollowSet.has(key) };
    }

    function clear() {
      map.clearRect(0, 0, W, H);
      map.drawImage(background, 0, 0, W, H);
    }

    // A volley from a to b (canvas pixels), fading with alpha; the newest with smoke.
    function shot(a, b, volley, artillery, alpha, newest) {
      map.save();
      map.strokeStyle = rgb(style.fire, 0.9 * alpha);
      map.lineWidth = 2 + 4 * volley;
      if (artillery) map.setLineDash([7, 4]);
      map.beginPath(); map.moveTo(a[0], a[1]); map.lineTo(b[0], b[1]); map.stroke();
      map.setLineDash([]);
      if (newest) {
        // Smoke at the muzzle, a burst on the target.
        map.fillStyle = "rgba(255,255,255,0.8)";
        map.beginPath(); map.arc(a[0], a[1], 3 + 3 * volley, 0, 2 * Math.PI); map.fill();
        map.fillStyle = rgb(style.fire, 0.9);
        map.beginPath(); map.arc(b[0], b[1], 2 + 3 * volley, 0, 2 * Math.PI); map.fill();
      }
      map.restore();
    }

    // Hand-to-hand fighting between a and b (canvas pixels).
    function melee(a, b) {
      const mx = (a[0] + b[0]) / 2, my = (a[1] + b[1]) / 2;
      const r = 11;
      map.save();
      // A starburst with crossed blades.
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

    // A unit: {x, y (canvas pixels), theta, team, arm, formation, strength, morale,
    // routed, destroyed}; `label` names a routed unit (in small battles only, where the
    // labels do not cover each other).
    function unit(u, label) {
      const { front, depth, hollow } = shapeOf(u);
      const halfFront = 0.5 * front * Math.max(u.strength, 0.15) * pxPerM;
      const halfDepth = 0.5 * depth * pyPerM;
      const colour = u.destroyed ? style.destroyed
        : u.routed ? style.routed[u.team] : style.team[u.team];
      map.save();
      map.translate(u.x, u.y);
      map.rotate(-u.theta); // map angles turn anticlockwise, the canvas's y points down
      // Local frame: +x is the unit's facing, y runs along its front.
      map.lineJoin = "round";
      if (u.routed && !u.destroyed) map.setLineDash([4, 3]);
      map.beginPath();
      map.rect(-halfDepth, -halfFront, 2 * halfDepth, 2 * halfFront);
      if (hollow) {
        map.strokeStyle = rgb(colour); map.lineWidth = 3; map.stroke();
      } else {
        map.fillStyle = rgb(colour); map.fill();
        map.strokeStyle = "rgb(20,20,20)"; map.lineWidth = 1; map.stroke();
      }
      map.setLineDash([]);
      if (u.arm === style.arms.cavalry) {
        // A diagonal stripe, as on a staff map.
        map.strokeStyle = rgb(style.marking); map.lineWidth = 2;
        map.beginPath(); map.moveTo(-halfDepth, -halfFront); map.lineTo(halfDepth, halfFront);
        map.stroke();
      } else if (u.arm === style.arms.artillery) {
        map.fillStyle = hollow ? rgb(colour) : rgb(style.marking);
        map.beginPath(); map.arc(0, 0, 2.5, 0, 2 * Math.PI); map.fill();
      }
      if (u.destroyed) {
        map.strokeStyle = "rgb(20,20,20)"; map.lineWidth = 2;
        const r = Math.max(halfFront, halfDepth, 6);
        map.beginPath(); map.moveTo(-r, -r); map.lineTo(r, r); map.moveTo(r, -r); map.lineTo(-r, r);
        map.stroke();
      } else if (!u.routed) {
        // An arrowhead on the front shows the facing.
        const s = battle.unitScale * pxPerM;
        map.fillStyle = rgb(colour); map.strokeStyle = "rgb(20,20,20)"; map.lineWidth = 1;
        map.beginPath();
        map.moveTo(halfDepth + 16 * s, 0); map.lineTo(halfDepth, 9 * s); map.lineTo(halfDepth, -9 * s);
        map.closePath(); map.fill(); map.stroke();
      }
      map.restore();
      if (!u.destroyed) {
        // Strength (dark) and morale (gold) bars under the unit.
        const bx = u.x - 15, by = u.y + 30 * battle.unitScale * pyPerM;
        map.fillStyle = "rgba(255,255,255,0.9)"; map.fillRect(bx, by, 30, 7);
        map.fillStyle = "rgb(30,30,30)"; map.fillRect(bx, by, 30 * u.strength, 3);
        map.fillStyle = "rgb(230,180,40)"; map.fillRect(bx, by + 4, 30 * u.morale, 3);
      }
      if (u.routed && !u.destroyed && label) {
        map.save();
        map.font = "bold 10px system-ui, sans-serif"; map.textAlign = "center";
        map.fillStyle = "rgb(20,20,20)";
        map.fillText("routed", u.x, u.y - Math.max(halfFront, halfDepth) - 4);
        map.restore();
      }
    }

    return { ctx: map, W, H, dpr, pxPerM, pyPerM, toPx, toMap, clear, unit, shot, melee };
  }

  // The legend of the drawing conventions, as items of the list `list`.
  function legend(list, style, dpr) {
    function item(label, paint) {
      const li = document.createElement("li");
      const icon = document.createElement("canvas");
      const ctx = sizeCanvas(icon, 34, 18, dpr);
      paint(ctx);
      const span = document.createElement("span");
      span.textContent = label;
      li.append(icon, span);
      list.append(li);
    }
    const block = (ctx, colour, hollow, w = 24, h = 8) => {
      ctx.beginPath(); ctx.rect(17 - w / 2, 9 - h / 2, w, h);
      if (hollow) { ctx.strokeStyle = rgb(colour); ctx.lineWidth = 2.5; ctx.stroke(); }
      else { ctx.fillStyle = rgb(colour); ctx.fill(); ctx.strokeStyle = "rgb(20,20,20)"; ctx.lineWidth = 1; ctx.stroke(); }
    };
    item("infantry in line", (c) => block(c, style.team[0], false));
    item("column", (c) => block(c, style.team[0], false, 9, 16));
    item("square", (c) => block(c, style.team[0], true, 13, 13));
    item("cavalry", (c) => {
      block(c, style.team[1], false);
      c.strokeStyle = rgb(style.marking); c.lineWidth = 2;
      c.beginPath(); c.moveTo(5, 5); c.lineTo(29, 13); c.stroke();
    });
    item("guns in battery", (c) => {
      block(c, style.team[1], false, 16, 7);
      c.fillStyle = rgb(style.marking); c.beginPath(); c.arc(17, 9, 2.5, 0, 2 * Math.PI); c.fill();
    });
    item("limbered", (c) => block(c, style.team[1], true, 7, 16));
    item("routed", (c) => { c.setLineDash([4, 3]); block(c, style.routed[0], false); });
    item("destroyed", (c) => {
      block(c, style.destroyed, false);
      c.strokeStyle = "rgb(20,20,20)"; c.lineWidth = 2;
      c.beginPath(); c.moveTo(11, 3); c.lineTo(23, 15); c.moveTo(23, 3); c.lineTo(11, 15); c.stroke();
    });
    item("fire", (c) => {
      c.strokeStyle = rgb(style.fire); c.lineWidth = 3;
      c.beginPath(); c.moveTo(2, 9); c.lineTo(32, 9); c.stroke();
    });
    item("melee", (c) => {
      c.fillStyle = "rgba(230,60,20,0.9)"; c.beginPath();
      for (let n = 0; n < 16; n++) {
        const a = (n * Math.PI) / 8, r = n % 2 ? 4 : 8;
        c.lineTo(17 + r * Math.cos(a), 9 + r * Math.sin(a));
      }
      c.closePath(); c.fill();
    });
  }

  window.BattleDraw = { rgb, decode, sizeCanvas, painter, legend };
})();
