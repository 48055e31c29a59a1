// The results browser's folder page (written by `master results index`):
// filters the folder's runs and jobs, and draws two schedulers of a point
// side by side. The data are the page's own (#data), so the page works
// from disk.
const D = JSON.parse(document.getElementById('data').textContent);
const T = t => t.rows.map(r => Object.fromEntries(t.header.map((h, i) => [h, r[i]])));
const RUNS = T(D.runs), JOBS = T(D.jobs);
const uniq = v => [...new Set(v)].filter(x => x !== undefined && x !== '');
const num = x => { const v = parseFloat(x); return Number.isFinite(v) ? v : NaN; };
const mean = v => v.reduce((a, b) => a + b, 0) / v.length;
// Student's t, 97.5% quantile, by degrees of freedom (then 1.96).
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042];

function fill(sel, values, all) {
  sel.innerHTML = (all ? '<option value="">all</option>' : '') + values.map(v => `<option>${v}</option>`).join('');
}

function table(el, rows, cols, cap) {
  const shown = rows.slice(0, cap);
  el.innerHTML = '<thead><tr>' + cols.map(c => `<th>${c}</th>`).join('') + '</tr></thead><tbody>' +
    shown.map(r => '<tr>' + cols.map(c => `<td>${r[c] ?? ''}</td>`).join('') + '</tr>').join('') + '</tbody>';
  el.dataset.rows = rows.length;
  if (rows.length > cap) el.insertAdjacentHTML('afterend', `<p class="cap">${rows.length - cap} more rows not shown</p>`);
}

// rep -> seed per point and scheduler, to filter jobs by seed.
const SEED = {};
for (const r of RUNS) SEED[[r.point, r.scheduler, r.rep].join('\u0000')] = r.seed;
const seedOf = j => SEED[[j.point, j.scheduler, j.rep].join('\u0000')];

function render() {
  const p = document.getElementById('f-point').value, s = document.getElementById('f-sched').value,
    seed = document.getElementById('f-seed').value;
  const keep = r => (!p || r.point === p) && (!s || r.scheduler === s) && (!seed || (r.seed ?? seedOf(r)) === seed);
  const rc = ['point', 'scheduler', 'rep', 'seed', 'status', 'mean_jct_s', 'makespan_s', 'data_local', 'data_remote', 'locality_pct', 'host_cpu_pct'].filter(c => D.runs.header.includes(c));
  const jc = ['point', 'scheduler', 'rep', 'job', 'maps', 'reduces', 'state', 'jct_s', 'deadline_met', 'cost_total'].filter(c => D.jobs.header.includes(c));
  for (const el of document.querySelectorAll('.cap')) el.remove();
  table(document.getElementById('runs'), RUNS.filter(keep), rc, 1000);
  table(document.getElementById('jobs'), JOBS.filter(keep), jc, 500);
}

function cdf(series, w, h) {
  const all = series.flatMap(s => s.values);
  if (!all.length) return '<p class="none">no jobs</p>';
  const max = Math.max(...all) || 1;
  const colors = ['#1f77b4', '#d62728'];
  let svg = `<svg id="sb-cdf" width="${w}" height="${h}" data-series="${series.length}" data-points="${all.length}">`;
  series.forEach((s, k) => {
    const v = [...s.values].sort((a, b) => a - b);
    const pts = v.map((x, i) => `${(40 + (w - 50) * x / max).toFixed(1)},${(h - 20 - (h - 30) * (i + 1) / v.length).toFixed(1)}`);
    svg += `<polyline fill="none" stroke="${colors[k]}" stroke-width="2" points="40,${h - 20} ${pts.join(' ')}"><title>${s.name}</title></polyline>`;
    svg += `<text x="${w - 150}" y="${20 + 16 * k}" fill="${colors[k]}">${s.name}</text>`;
  });
  svg += `<text x="40" y="${h - 4}">0</text><text x="${w - 60}" y="${h - 4}">${max.toFixed(1)} s</text><text x="2" y="14">CDF of JCT</text></svg>`;
  return svg;
}

function paired(p, a, b) {
  const by = s => Object.fromEntries(RUNS.filter(r => r.point === p && r.scheduler === s && r.status === 'ok').map(r => [r.seed, num(r.mean_jct_s)]));
  const A = by(a), B = by(b), seeds = Object.keys(A).filter(k => k in B);
  if (seeds.length < 2) return `<p id="sb-paired">paired difference: fewer than 2 seeds with both</p>`;
  const d = seeds.map(k => A[k] - B[k]), m = mean(d), n = d.length;
  const sd = Math.sqrt(d.reduce((x, y) => x + (y - m) ** 2, 0) / (n - 1));
  const t = n - 1 <= 30 ? T975[n - 2] : 1.96, half = t * sd / Math.sqrt(n);
  const none = m - half <= 0 && 0 <= m + half;
  return `<p id="sb-paired" data-seeds="${n}">mean JCT, ${a} minus ${b}, paired over ${n} seeds: ${m.toFixed(2)} s [${(m - half).toFixed(2)}, ${(m + half).toFixed(2)}] (Student's t 95%)${none ? ', no difference shown' : ''}</p>`;
}

function side() {
  const p = document.getElementById('sb-point').value, a = document.getElementById('sb-a').value,
    b = document.getElementById('sb-b').value, out = document.getElementById('sb-out');
  if (!p || !a || !b) { out.innerHTML = ''; return; }
  const jct = s => {
    const j = JOBS.filter(r => r.point === p && r.scheduler === s && (r.state ?? 'succeeded') === 'succeeded').map(r => num(r.jct_s));
    return j.length ? j : RUNS.filter(r => r.point === p && r.scheduler === s).map(r => num(r.mean_jct_s));
  };
  const series = [a, b].map(s => ({ name: s, values: jct(s).filter(Number.isFinite) }));
  const loc = s => { const v = RUNS.filter(r => r.point === p && r.scheduler === s).map(r => num(r.locality_pct)).filter(Number.isFinite); return v.length ? mean(v).toFixed(1) + '%' : 'n/a'; };
  out.innerHTML = cdf(series, 640, 260) + `<p id="sb-loc">locality: ${a} ${loc(a)}, ${b} ${loc(b)}</p>` + paired(p, a, b);
}

function pickPoint() {
  const p = document.getElementById('sb-point').value;
  const s = uniq(RUNS.filter(r => r.point === p).map(r => r.scheduler));
  fill(document.getElementById('sb-a'), s, false);
  fill(document.getElementById('sb-b'), s, false);
  if (s.length > 1) document.getElementById('sb-b').value = s[1];
  side();
}

fill(document.getElementById('f-point'), uniq(RUNS.map(r => r.point)), true);
fill(document.getElementById('f-sched'), uniq(RUNS.map(r => r.scheduler)), true);
fill(document.getElementById('f-seed'), uniq(RUNS.map(r => r.seed)), true);
fill(document.getElementById('sb-point'), uniq(RUNS.map(r => r.point)), false);
for (const id of ['f-point', 'f-sched', 'f-seed']) document.getElementById(id).addEventListener('change', render);
document.getElementById('sb-point').addEventListener('change', pickPoint);
for (const id of ['sb-a', 'sb-b']) document.getElementById(id).addEventListener('change', side);
render();
pickPoint();
