// Part 4 of 5: the Calls figures from /metrics (Prometheus text, quantiles
// interpolated the way histogram_quantile does).
// ---- metrics -------------------------------------------------------------------
// Prometheus text: one sample per line, `name{label="value",...} number`.
function parseMetrics(text) {
  const samples = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    let l;
    while ((l = re.exec(m[2] || ""))) labels[l[1]] = l[2].replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}
function formatDuration(s) {
  if (!isFinite(s)) return "> 10 s";
  if (s < 0.001) return (s * 1e6).toFixed(0) + " µs";
  if (s < 1) return (s * 1e3).toFixed(s < 0.01 ? 2 : 1) + " ms";
  return s.toFixed(2) + " s";
}
// The q-quantile of cumulative buckets ({le, count}, le ascending), interpolated
// linearly inside the bucket the way Prometheus' histogram_quantile does.
function quantile(q, buckets) {
  const total = buckets.length ? buckets[buckets.length - 1].count : 0;
  if (!total) return null;
  const rank = q * total;
  let prevLe = 0, prevCount = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe === 0 ? Infinity : prevLe;
      return prevLe + (b.le - prevLe) * ((rank - prevCount) / Math.max(b.count - prevCount, 1));
    }
    prevLe = b.le; prevCount = b.count;
  }
  return null;
}
function renderMetrics(text) {
  const samples = parseMetrics(text);
  let total = 0;
  const errors = new Map();
  const buckets = new Map();
  let inFlight = 0;
  for (const s of samples) {
    if (s.name === "wasmhub_calls_total") {
      total += s.value;
      if (s.labels.outcome !== "ok") errors.set(s.labels.outcome, (errors.get(s.labels.outcome) || 0) + s.value);
    } else if (s.name === "wasmhub_call_duration_seconds_bucket") {
      const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
      buckets.set(le, (buckets.get(le) || 0) + s.value);
    } else if (s.name === "wasmhub_calls_in_flight") {
      inFlight = s.value;
    }
  }
  const now = performance.now();
  const prev = state.prevSample;
  if (prev && now > prev.at && total >= prev.total) {
    $("m-rate").textContent = ((total - prev.total) / ((now - prev.at) / 1000)).toFixed(2);
  } else {
    $("m-rate").textContent = "…";
  }
  state.prevSample = { at: now, total };
  $("m-total").textContent = String(total);
  $("m-inflight").textContent = String(inFlight);
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0]).map(([le, count]) => ({ le, count }));
  const p99 = quantile(0.99, sorted);
  $("m-p99").textContent = p99 === null ? "—" : formatDuration(p99);
  const errs = $("m-errors");
  if (!errors.size) errs.replaceChildren(el("span", "note", "none"));
  else errs.replaceChildren(...[...errors.entries()].sort((a, b) => b[1] - a[1]).map(([code, n]) => {
    const b = el("span", "badge err error-code", code + " " + n);
    b.dataset.code = code;
    return b;
  }));
}

