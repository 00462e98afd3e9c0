(function () {
  "use strict";
  var script = document.currentScript;
  var root = script && script.previousElementSibling;
  if (!root || !root.classList || !root.classList.contains("attn-x") || root.getAttribute("data-live")) return;
  var source = root.querySelector("script.attn-x-data");
  if (!source) return;
  var D = JSON.parse(source.textContent);
  var L = D.layers, H = D.heads, N = D.queries.length, M = D.keys.length;
  var bytes = atob(D.weights), W = new Uint8Array(bytes.length);
  for (var b = 0; b < bytes.length; b++) W[b] = bytes.charCodeAt(b);
  function weight(l, h, q, k) { return W[((l * H + h) * N + q) * M + k] / D.scale; }
  function masked(q, k) { return D.mask !== null && D.mask.charAt(q * M + k) === "0"; }
  function fixed(v) { return v.toFixed(2); }
  var VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70", "#7ad151",
                 "#bddf26", "#fde725"];
  var HEAD_COLOURS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#56b4e9", "#e69f00", "#000000", "#8c564b"];
  function channel(hex, i) { return parseInt(hex.substr(1 + 2 * i, 2), 16); }
  // The colour scale runs from 0 to TOP: 1, or the largest weight shown (explore_attention's vmax=); a weight above
  // TOP gets the top colour. Views stored before vmax existed hold no D.vmax and keep the 0-1 scale.
  var TOP = D.vmax || 1;
  function colour(v) {
    var x = Math.max(0, Math.min(1, v / TOP)) * (VIRIDIS.length - 1), i = Math.min(Math.floor(x), VIRIDIS.length - 2);
    var f = x - i, rgb = [0, 1, 2].map(function (c) {
      return Math.round(channel(VIRIDIS[i], c) * (1 - f) + channel(VIRIDIS[i + 1], c) * f);
    });
    return "rgb(" + rgb.join(",") + ")";
  }
  function headColour(h) { return HEAD_COLOURS[h % HEAD_COLOURS.length]; }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  // A label that repeats in its sequence gets its position in front ("2·the"), as the static figure labels it
  // (course/explorer/__init__.py, distinct_labels): eight queries "→9" become "0·→9" ... "7·→9".
  function distinct(labels) {
    var count = Object.create(null);
    labels.forEach(function (s) { count[s] = (count[s] || 0) + 1; });
    return labels.map(function (s, i) { return count[s] > 1 ? i + "\u00b7" + s : s; });
  }
  var QL = distinct(D.queries), KL = distinct(D.keys);
  // What the two sides are called: "queries" and "keys", or for cross-attention the target's and the source's.
  var SIDES = D.sides || ["queries", "keys"];
  var DECK = !!(root.closest && root.closest(".reveal"));

  // What is shown: a layer, the heads shown (state.shown, in order) and a token: a query (side "q") or a key (side
  // "k"). state.head names the heads for the Head buttons: one head (0, 1, ...), -1 for all heads, or -2 for a set of
  // them (a head's colour square adds or removes it). The view opens on the layer and head the text discusses
  // (explore_attention's layer= and head=).
  var start = D.start || {layer: 0, head: 0};
  var ALL = Array.from({length: H}, function (_, h) { return h; });
  var state = {layer: start.layer, head: start.head, shown: start.head < 0 ? ALL : [start.head], side: "q", index: 0};
  function showHead(v) { state.head = v; state.shown = v < 0 ? ALL : [v]; render(); }
  function toggleHead(h) {
    var next = state.shown.indexOf(h) < 0 ? state.shown.concat([h])
      : state.shown.filter(function (s) { return s !== h; });
    if (!next.length) return;  // the last head shown stays
    state.shown = next.sort(function (a, b) { return a - b; });
    state.head = next.length === H ? -1 : next.length === 1 ? next[0] : -2;
    render();
  }
  var hover = null;  // a token under the mouse, previewed without changing the selection

  var ui = document.createElement("div");
  ui.className = "attn-x-ui";
  if (D.title) {
    var heading = document.createElement("div");
    heading.className = "attn-x-title";
    heading.textContent = D.title;
    ui.appendChild(heading);
  }
  var controls = document.createElement("div");
  controls.className = "attn-x-controls";
  ui.appendChild(controls);

  // A group of radio buttons with one tab stop; the arrow keys, Home and End move the choice.
  function group(name, items, current, choose, toggle) {
    var box = document.createElement("div");
    box.className = "attn-x-group";
    var label = document.createElement("span");
    label.className = "attn-x-name";
    label.textContent = name;
    box.appendChild(label);
    var list = document.createElement("div");
    list.className = "attn-x-group";
    list.setAttribute("role", "radiogroup");
    list.setAttribute("aria-label", name);
    var swatches = [];
    var buttons = items.map(function (item, i) {
      var button = document.createElement("button");
      button.type = "button";
      button.setAttribute("role", "radio");
      button.setAttribute("data-value", String(item.value));
      if (item.colour && toggle) {
        // The head's colour square is a button of its own: it adds the head to the heads shown, or removes it.
        var swatch = document.createElement("button");
        swatch.type = "button";
        swatch.className = "attn-x-swatch";
        swatch.setAttribute("data-toggle", String(item.value));
        swatch.setAttribute("aria-label", "show head " + item.value + " with the others, or hide it");
        swatch.title = "head " + item.value + ": add to the heads shown, or remove";
        swatch.style.borderColor = item.colour;
        swatch.addEventListener("click", function () { toggle(item.value); swatch.focus(); });
        list.appendChild(swatch);
        swatches.push({button: swatch, value: item.value, colour: item.colour});
      }
      button.appendChild(document.createTextNode(item.text));
      // A click leaves the focus on the button, so that the arrow keys go on from there (JupyterLab would keep
      // it on the cell, and its arrow keys would move the cells).
      button.addEventListener("click", function () { choose(item.value); button.focus(); });
      button.addEventListener("keydown", function (event) {
        var step = {ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1}[event.key];
        var to = step ? (i + step + items.length) % items.length : event.key === "Home" ? 0
          : event.key === "End" ? items.length - 1 : -1;
        if (to < 0) return;
        event.preventDefault();
        keyboard = true;
        hover = null;
        choose(items[to].value);
        buttons[to].focus();
      });
      list.appendChild(button);
      return button;
    });
    box.appendChild(list);
    controls.appendChild(box);
    return function (value, shown) {
      var any = items.some(function (item) { return item.value === value; });
      buttons.forEach(function (button, i) {
        var on = items[i].value === value;
        button.setAttribute("aria-checked", on ? "true" : "false");
        button.tabIndex = on || (!any && i === 0) ? 0 : -1;  // a set of heads checks no button: Tab still gets in
      });
      swatches.forEach(function (s) {
        var pressed = !!shown && shown.indexOf(s.value) >= 0;
        s.button.setAttribute("aria-pressed", pressed ? "true" : "false");
        s.button.style.background = pressed ? s.colour : "#fff";
      });
    };
  }
  var layers = [], heads = [{value: -1, text: "all heads"}];
  for (var l = 0; l < L; l++) layers.push({value: l, text: String(l)});
  for (var h = 0; h < H; h++) heads.push({value: h, text: String(h), colour: headColour(h)});
  // One layer: no layer to pick, so no "Layer" group.
  var markLayer = L > 1 ? group("Layer", layers, state.layer, function (v) { state.layer = v; render(); })
    : function () {};
  var markHead = group(H > 1 ? "Head" : "Head (one)", heads, state.head, showHead, H > 1 ? toggleHead : null);

  // The model view: every layer x head as a small heatmap, one row per layer; a click opens that layer and head.
  var markThumb = function () {};
  if (L * H > 1) {
    var overview = document.createElement("div");
    overview.className = "attn-x-overview";
    overview.setAttribute("aria-label", "every layer and head");
    var caption = document.createElement("div");
    caption.className = "attn-x-name";
    caption.textContent = "Every layer and head (click one to show it above):";
    overview.appendChild(caption);
    var thumbs = [], TW = 56, cw = TW / M, ch = TW / N;
    for (var tl = 0; tl < L; tl++) {
      var line = document.createElement("div");
      line.className = "attn-x-thumbs";
      var tag = document.createElement("span");
      tag.className = "attn-x-name";
      tag.textContent = "layer " + tl;
      line.appendChild(tag);
      for (var th = 0; th < H; th++) {
        var thumb = document.createElement("button");
        thumb.type = "button";
        thumb.className = "attn-x-thumb";
        thumb.setAttribute("data-layer", String(tl));
        thumb.setAttribute("data-head", String(th));
        thumb.setAttribute("aria-label", "layer " + tl + ", head " + th);
        thumb.title = "layer " + tl + ", head " + th;
        var cells = [];
        for (var tq = 0; tq < N; tq++) for (var tk = 0; tk < M; tk++) {
          cells.push('<rect x="' + (tk * cw).toFixed(2) + '" y="' + (tq * ch).toFixed(2) + '" width="' + (cw + 0.3).toFixed(2) +
                     '" height="' + (ch + 0.3).toFixed(2) + '" fill="' + (masked(tq, tk) ? "#d0d0d0" : colour(weight(tl, th, tq, tk))) +
                     '"></rect>');
        }
        thumb.innerHTML = '<svg viewBox="0 0 ' + TW + " " + TW + '" width="' + TW + '" height="' + TW + '" aria-hidden="true">' +
          cells.join("") + '</svg><span class="attn-x-thumb-name">' + th + "</span>";
        thumb.addEventListener("click", (function (l, h, button) {
          return function () { state.layer = l; state.head = h; state.shown = [h]; render(); button.focus(); };
        })(tl, th, thumb));
        line.appendChild(thumb);
        thumbs.push(thumb);
      }
      overview.appendChild(line);
    }
    markThumb = function () {
      thumbs.forEach(function (thumb) {
        var on = +thumb.getAttribute("data-layer") === state.layer &&
          state.shown.indexOf(+thumb.getAttribute("data-head")) >= 0;
        thumb.setAttribute("aria-pressed", on ? "true" : "false");
      });
    };
  }

  var view = document.createElement("div");
  view.className = "attn-x-view";
  ui.appendChild(view);
  var readout = document.createElement("div");
  readout.className = "attn-x-readout";
  readout.setAttribute("role", "status");
  readout.setAttribute("aria-live", "polite");
  ui.appendChild(readout);
  var help = document.createElement("div");
  help.className = "attn-x-help";
  var HELP = "Click or hover a token (Tab to it, then arrow keys) to see its weights; " +
    (H > 1 ? "a head's colour square adds it to the heads shown or removes it; " : "") +
    (DECK ? "Esc returns to the slides." : "Esc leaves the view.");
  ui.appendChild(help);
  if (overview) ui.appendChild(overview);  // under the help line: the drawing above keeps its place

  // Geometry, in CSS pixels at natural size (the drawing scales down, never below the page's width).
  // Top to bottom: the sides' names (HEAD), the key labels, the heatmap beside the lines, the colour scale (BAR).
  var ROW = 30, CHAR = 10.5, PAD = 8, LINES = 190, NUM = 72, LEFT = 4, HEAD = 26, BAR = 50;
  function widest(labels) { return labels.reduce(function (a, s) { return Math.max(a, s.length); }, 1) * CHAR; }
  var qW = Math.max(LEFT + widest(QL) + 2 * PAD, LEFT + widest([SIDES[0]]) * 0.9 + PAD), kW = widest(KL) + 2 * PAD;
  var cellW = M * 48 <= 576 ? 48 : Math.max(24, Math.floor(576 / M));
  var upright = widest(KL) + 6 <= cellW;
  var top = HEAD + (upright ? ROW + 4 : widest(KL) + 2 * PAD);
  var gridX = qW, gridR = qW + M * cellW, linesX = gridR + 14, keysX = linesX + LINES;
  var rowsBottom = top + N * ROW;  // the heatmap's bottom; the colour scale goes under it
  var width = keysX + Math.max(kW + NUM, widest([SIDES[1]]) * 0.9 + PAD) + PAD;
  var height = Math.max(rowsBottom + BAR, top + M * ROW + 4);
  function qy(i) { return top + (i + 0.5) * ROW; }
  function ky(j) { return top + (j + 0.5) * ROW; }

  function token(side, i, x, y, w, text, anchor) {
    var on = hover ? hover.side === side && hover.index === i : state.side === side && state.index === i;
    var chosen = state.side === side && state.index === i;
    return '<g class="attn-x-tok' + (on ? " attn-x-on" : "") + '" data-side="' + side + '" data-index="' + i +
      '" tabindex="' + (chosen ? 0 : -1) + '" role="radio" aria-checked="' + chosen + '" aria-label="' +
      (side === "q" ? "query " : "key ") + esc(text) + '"><rect class="attn-x-ring" x="' + x + '" y="' + (y - ROW / 2 + 1) +
      '" width="' + w + '" height="' + (ROW - 2) + '" rx="4"></rect><text x="' + (anchor === "end" ? x + w - PAD : x + PAD) +
      '" y="' + (y + 5.5) + '" text-anchor="' + anchor + '">' + esc(text) + "</text></g>";
  }
  function cross(x, y, w, hgt) {
    var r = Math.min(w, hgt) * 0.28, cx = x + w / 2, cy = y + hgt / 2;
    return '<path d="M' + (cx - r) + " " + (cy - r) + "L" + (cx + r) + " " + (cy + r) + "M" + (cx - r) + " " + (cy + r) +
      "L" + (cx + r) + " " + (cy - r) + '" stroke="#505050" stroke-width="2"></path>';
  }

  var hovered = null;  // the outline of the hovered heatmap cell
  function render() {
    markLayer(state.layer);
    markHead(state.head, state.shown);
    markThumb();
    var focused = root.contains(document.activeElement) && document.activeElement.getAttribute("data-side");
    var pick = hover || state, l = state.layer;
    var shownHeads = state.shown;
    var out = [];
    out.push('<svg viewBox="0 0 ' + width + " " + height + '" width="' + width +
             '" height="' + height + '" role="group" aria-label="attention weights, layer ' + l + '">');
    // what the sides are: over the query labels, over the heatmap's columns and over the key labels
    var headY = HEAD - 8;
    out.push('<text class="attn-x-side" x="' + (qW - 4 - PAD) + '" y="' + headY + '" text-anchor="end">' + esc(SIDES[0]) +
             '</text><text class="attn-x-side" x="' + (gridX + gridR) / 2 + '" y="' + headY + '" text-anchor="middle">' +
             esc(SIDES[1]) + '</text><text class="attn-x-side" x="' + (keysX + PAD) + '" y="' + headY + '">' +
             esc(SIDES[1]) + "</text>");
    // key labels over the heatmap's columns
    for (var k = 0; k < M; k++) {
      var cx = gridX + (k + 0.5) * cellW;
      out.push(upright ? '<text x="' + cx + '" y="' + (top - 10) + '" text-anchor="middle">' + esc(KL[k]) + "</text>"
        : '<text transform="translate(' + (cx + 6) + "," + (top - PAD) + ') rotate(-90)">' + esc(KL[k]) + "</text>");
    }
    // the colour scale under the heatmap: weight 0 to TOP, as the cells are coloured
    var barY = rowsBottom + 12, barW = Math.max(gridR - gridX, 120), steps = 40;
    for (var st = 0; st < steps; st++) {
      out.push('<rect class="attn-x-scale" x="' + (gridX + st * barW / steps).toFixed(2) + '" y="' + barY + '" width="' +
               (barW / steps + 0.5).toFixed(2) + '" height="12" fill="' + colour(TOP * (st + 0.5) / steps) + '"></rect>');
    }
    out.push('<text x="' + gridX + '" y="' + (barY + 32) + '" text-anchor="start">0</text><text x="' + (gridX + barW) +
             '" y="' + (barY + 32) + '" text-anchor="end">' + (TOP < 1 ? fixed(TOP) : "1") + '</text><text x="' + (gridX + barW / 2) + '" y="' +
             (barY + 32) + '" text-anchor="middle">weight</text>');
    // the heatmap: one colour per cell, or in "all heads" one stripe per head, left to right
    for (var q = 0; q < N; q++) {
      for (k = 0; k < M; k++) {
        var x = gridX + k * cellW, y = top + q * ROW;
        if (masked(q, k)) {
          out.push('<rect class="attn-x-cell" x="' + x + '" y="' + y + '" width="' + cellW + '" height="' + ROW +
                   '" fill="#d0d0d0" data-query="' + q + '" data-key="' + k + '" data-weight="masked"></rect>' +
                   cross(x, y, cellW, ROW));
          continue;
        }
        var stripe = cellW / shownHeads.length;
        shownHeads.forEach(function (h, s) {
          var v = weight(l, h, q, k);
          out.push('<rect class="attn-x-cell" x="' + (x + s * stripe) + '" y="' + y + '" width="' + stripe + '" height="' +
                   ROW + '" fill="' + colour(v) + '" data-query="' + q + '" data-key="' + k + '" data-head="' + h +
                   '" data-weight="' + fixed(v) + '"></rect>');
        });
      }
    }
    // in "all heads", white lines between the cells group each cell's stripes
    if (shownHeads.length > 1) {
      for (k = 1; k < M; k++) {
        out.push('<line x1="' + (gridX + k * cellW) + '" y1="' + top + '" x2="' + (gridX + k * cellW) + '" y2="' +
                 (top + N * ROW) + '" stroke="#fff" stroke-width="3" pointer-events="none"></line>');
      }
    }
    // the chosen row (a query) or column (a key), outlined, with its numbers when one head is shown
    var box = pick.side === "q" ? [gridX, top + pick.index * ROW, M * cellW, ROW]
      : [gridX + pick.index * cellW, top, cellW, N * ROW];
    out.push('<rect x="' + box[0] + '" y="' + box[1] + '" width="' + box[2] + '" height="' + box[3] +
             '" fill="none" stroke="#c04000" stroke-width="3" pointer-events="none"></rect>');
    if (state.head >= 0 && cellW >= 44) {
      for (var c = 0; c < (pick.side === "q" ? M : N); c++) {
        var qq = pick.side === "q" ? pick.index : c, kk = pick.side === "q" ? c : pick.index;
        if (masked(qq, kk)) continue;
        var v = weight(l, state.head, qq, kk);
        out.push('<text class="attn-x-num" pointer-events="none" text-anchor="middle" x="' + (gridX + (kk + 0.5) * cellW) +
                 '" y="' + (top + qq * ROW + ROW / 2 + 5.5) + '" fill="' + (v > 0.6 * TOP ? "#000" : "#fff") + '" style="fill:' +
                 (v > 0.6 * TOP ? "#000" : "#fff") + '">' + fixed(v) + "</text>");
      }
    }
    // lines from the chosen query to every key, or from every query to the chosen key
    var links = [];
    shownHeads.forEach(function (h, s) {
      var dy = shownHeads.length > 1 ? (s - (shownHeads.length - 1) / 2) * 2.5 : 0;
      for (var c = 0; c < (pick.side === "q" ? M : N); c++) {
        var qq = pick.side === "q" ? pick.index : c, kk = pick.side === "q" ? c : pick.index;
        if (masked(qq, kk)) continue;
        var v = weight(l, h, qq, kk);
        links.push('<line class="attn-x-link" x1="' + linesX + '" y1="' + (qy(qq) + dy) + '" x2="' + (keysX - 4) + '" y2="' +
                   (ky(kk) + dy) + '" stroke="' + (shownHeads.length > 1 ? headColour(h) : "#1a1a1a") + '" stroke-width="' +
                   (0.75 + 8 * v).toFixed(2) + '" stroke-opacity="' + (0.12 + 0.88 * v).toFixed(2) + '" stroke-linecap="round"' +
                   ' data-query="' + qq + '" data-key="' + kk + '" data-head="' + h + '" data-weight="' + fixed(v) + '"></line>');
      }
    });
    out.push(links.join(""));
    // the tokens: queries left of the heatmap, keys right of the lines, each with its weight for the chosen query
    for (q = 0; q < N; q++) out.push(token("q", q, LEFT, qy(q), qW - LEFT - 4, QL[q], "end"));
    for (k = 0; k < M; k++) {
      out.push(token("k", k, keysX, ky(k), kW, KL[k], "start"));
      if (pick.side === "q") {
        var text = masked(pick.index, k) ? "masked" : state.head >= 0 ? fixed(weight(l, state.head, pick.index, k)) : "";
        if (text) out.push('<text class="attn-x-num" x="' + (keysX + kW + 2) + '" y="' + (ky(k) + 5.5) + '" style="fill:' +
                           (text === "masked" ? "#666" : "#1a1a1a") + '">' + text + "</text>");
      }
    }
    // the heatmap cell under the pointer (or the cell of the line under it), outlined by describe()
    // (dark and light, so that it shows on every colour)
    out.push('<g class="attn-x-hovered" pointer-events="none" visibility="hidden"><rect x="1.5" y="1.5" width="' +
             (cellW - 3) + '" height="' + (ROW - 3) + '" fill="none" stroke="#1a1a1a" stroke-width="3"></rect><rect x="4" ' +
             'y="4" width="' + (cellW - 8) + '" height="' + (ROW - 8) + '" fill="none" stroke="#fff" stroke-width="2"></rect></g>');
    out.push("</svg>");
    view.innerHTML = out.join("");
    hovered = view.querySelector(".attn-x-hovered");
    root.setAttribute("data-layer", String(l));
    root.setAttribute("data-head", state.head === -1 ? "all" : state.shown.join(","));
    root.setAttribute("data-token", pick.side + pick.index);
    help.textContent = (shownHeads.length > 1 ? "Each heatmap cell has one stripe per head shown, the lowest head at " +
      "the left; the lines take the heads' colours. " : "") + HELP;
    describe(null);
    if (focused) {
      var again = view.querySelector('[data-side="' + state.side + '"][data-index="' + state.index + '"]');
      if (again) again.focus();
    }
  }

  function name(side, i) { return (side === "q" ? "query \u201c" + QL[i] : "key \u201c" + KL[i]) + "\u201d"; }
  function headName(h) { return "head " + h; }
  // The readout: the hovered cell's or line's weight, else the chosen token's largest weights. With several heads shown,
  // one short entry per head, in the head's colour: "head 1 ■ 0.62 “cat”".
  function describe(target) {
    var pick = hover || state, l = state.layer;
    var cell = target && target.getAttribute("data-query") !== null;
    outline(cell ? target : null);
    if (cell) {
      var q = +target.getAttribute("data-query"), k = +target.getAttribute("data-key");
      var h = target.getAttribute("data-head");
      readout.textContent = "layer " + l + (h !== null ? ", " + headName(h) : "") + ": " + name("q", q) + " \u2192 " +
        name("k", k) + ": " + (masked(q, k) ? "masked (may not attend)" : "weight " + target.getAttribute("data-weight"));
      return;
    }
    var heads = state.shown, entries = heads.map(function (h) {
      var best = -1, bestV = -1;
      for (var c = 0; c < (pick.side === "q" ? M : N); c++) {
        var q = pick.side === "q" ? pick.index : c, k = pick.side === "q" ? c : pick.index;
        if (!masked(q, k) && weight(l, h, q, k) > bestV) { best = c; bestV = weight(l, h, q, k); }
      }
      return {head: h, best: best, value: bestV, other: best < 0 ? "" : pick.side === "q" ? KL[best] : QL[best]};
    });
    if (heads.length === 1) {
      var e = entries[0];
      readout.textContent = "layer " + l + ", " + headName(e.head) + ": " + name(pick.side, pick.index) + ": " +
        (e.best < 0 ? "every key masked" : "largest weight " + fixed(e.value) +
         (pick.side === "q" ? " on key \u201c" : " from query \u201c") + e.other + "\u201d");
      return;
    }
    readout.textContent = "layer " + l + ", " + name(pick.side, pick.index) + ", largest weight " +
      (pick.side === "q" ? "(on key)" : "(from query)") + " per head:";
    entries.forEach(function (e) {
      var entry = document.createElement("span");
      entry.className = "attn-x-entry";
      entry.setAttribute("data-head", String(e.head));
      var swatch = document.createElement("span");
      swatch.className = "attn-x-dot";
      swatch.style.background = headColour(e.head);
      entry.appendChild(swatch);
      entry.appendChild(document.createTextNode(e.best < 0 ? headName(e.head) + ": every key masked"
        : headName(e.head) + ": " + fixed(e.value) + " \u201c" + e.other + "\u201d"));
      readout.appendChild(document.createTextNode(" "));
      readout.appendChild(entry);
    });
  }
  // The hovered cell's outline: the whole cell (every head's stripe), also for a hovered line, whose cell it shows.
  function outline(target) {
    if (!hovered) return;
    if (!target) {
      hovered.setAttribute("visibility", "hidden");
      root.removeAttribute("data-cell");
      return;
    }
    var q = +target.getAttribute("data-query"), k = +target.getAttribute("data-key");
    hovered.setAttribute("transform", "translate(" + (gridX + k * cellW) + "," + (top + q * ROW) + ")");
    hovered.setAttribute("visibility", "visible");
    root.setAttribute("data-cell", q + "," + k);
  }

  function tokenOf(element) { return element && element.closest ? element.closest("[data-side]") : null; }
  // At first and after a key press, the pointer previews nothing until it really moves over the view (a view
  // redrawn, or a slide shown, under a resting pointer would otherwise preview whatever token is under it).
  var keyboard = true, lastX = null, lastY = null;
  view.addEventListener("mousemove", function (event) {
    var moved = event.clientX !== lastX || event.clientY !== lastY;
    lastX = event.clientX;
    lastY = event.clientY;
    if (moved && keyboard) {
      keyboard = false;
      point(event.target);
    }
  });
  view.addEventListener("mouseover", function (event) { if (!keyboard) point(event.target); });
  function point(target) {
    var tok = tokenOf(target);
    if (tok) {
      var next = {side: tok.getAttribute("data-side"), index: +tok.getAttribute("data-index")};
      if (!hover || hover.side !== next.side || hover.index !== next.index) { hover = next; render(); }
      return;
    }
    if (hover) { hover = null; render(); }
    describe(target.getAttribute && target.getAttribute("data-weight") !== null ? target : null);
  }
  view.addEventListener("mouseleave", function () { if (hover) { hover = null; render(); } else describe(null); });
  view.addEventListener("click", function (event) {
    var tok = tokenOf(event.target), cell = event.target.closest && event.target.closest(".attn-x-cell");
    if (tok) choose(tok.getAttribute("data-side"), +tok.getAttribute("data-index"));
    else if (cell) choose("q", +cell.getAttribute("data-query"));
    else return;
    // The clicked token takes the focus, so that the arrow keys go on from it (in JupyterLab the click would
    // leave the focus on the cell, and the arrow keys would move the notebook's cells instead).
    var again = view.querySelector('[data-side="' + state.side + '"][data-index="' + state.index + '"]');
    if (again) again.focus();
  });
  function choose(side, index) { state.side = side; state.index = index; hover = null; render(); }
  view.addEventListener("focusin", function (event) {
    var tok = tokenOf(event.target);
    if (tok && (tok.getAttribute("data-side") !== state.side || +tok.getAttribute("data-index") !== state.index)) {
      choose(tok.getAttribute("data-side"), +tok.getAttribute("data-index"));
    }
  });
  view.addEventListener("keydown", function (event) {
    var tok = tokenOf(event.target);
    if (!tok) return;
    var side = state.side, i = state.index, size = side === "q" ? N : M;
    if (event.key === "ArrowDown") i = (i + 1) % size;
    else if (event.key === "ArrowUp") i = (i - 1 + size) % size;
    else if (event.key === "Home") i = 0;
    else if (event.key === "End") i = size - 1;
    else if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      side = side === "q" ? "k" : "q";
      i = Math.min(i, (side === "q" ? N : M) - 1);
    } else return;
    event.preventDefault();
    keyboard = true;
    choose(side, i);
    var again = view.querySelector('[data-side="' + side + '"][data-index="' + i + '"]');
    if (again) again.focus();
  });
  // A press and the focus moving inside the view stay here too: JupyterLab's notebook would otherwise take the focus
  // back to the cell after a click (a moment later), and the arrow keys would move its cells, not the view's token.
  ["mousedown", "focusin"].forEach(function (type) {
    root.addEventListener(type, function (event) { event.stopPropagation(); });
  });
  // Keys used here stay here: reveal.js (the slides) and JupyterLab's command mode would act on them too.
  root.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      if (document.activeElement && root.contains(document.activeElement)) document.activeElement.blur();
      event.stopPropagation();
      return;
    }
    if (/^(Arrow(Up|Down|Left|Right)|Home|End| |Enter|Tab)$/.test(event.key) || event.key === "Spacebar") {
      if (event.key !== "Tab") event.stopPropagation();
    }
  });

  render();
  var fallback = root.querySelector(".attn-x-fallback"), note = root.querySelector(".attn-x-note");
  root.appendChild(ui);
  if (fallback) fallback.remove();
  if (note) note.remove();
  root.setAttribute("data-live", "1");
})();
