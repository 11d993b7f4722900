// Plain SVG line charts for the stats view (no library: a few paths and labels).

const NS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten. */
function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 5, 10]) if (value <= m * power) return m * power;
  return 10 * power;
}

/**
 * Draws series over the last `windowMs` into `container`.
 * `series`: [{name, color, points: [[timeMs, value|null], ...]}]; `now` is the right edge.
 */
export function lineChart(container, series, { now, windowMs, label = '', empty = 'no data yet' }) {
  const width = Math.max(200, container.clientWidth || 400);
  const height = Math.max(120, container.clientHeight || 200);
  const pad = { left: 48, right: 10, top: 10, bottom: 22 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label });
  const values = series.flatMap((s) => s.points.map((p) => p[1]).filter((v) => v !== null && Number.isFinite(v)));
  const yMax = niceMax(Math.max(0, ...values) * 1.1);
  const x = (t) => pad.left + ((t - (now - windowMs)) / windowMs) * plotW;
  const y = (v) => pad.top + plotH - (v / yMax) * plotH;

  const axis = svg('g', { class: 'axis' });
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    axis.append(svg('line', { class: 'grid-line', x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }));
    axis.append(svg('text', { x: pad.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, formatTick(v)));
  }
  for (let s = 0; s <= windowMs / 1000; s += 15) {
    const t = now - s * 1000;
    axis.append(svg('text', { x: x(t), y: height - 6, 'text-anchor': s === 0 ? 'end' : 'middle' }, s === 0 ? 'now' : `-${s}s`));
  }
  root.append(axis);

  if (!values.length) {
    root.append(svg('text', { class: 'nodata', x: pad.left + plotW / 2, y: pad.top + plotH / 2, 'text-anchor': 'middle' }, empty));
  }
  for (const s of series) {
    let d = '';
    let pen = false;
    for (const [t, v] of s.points) {
      if (v === null || !Number.isFinite(v) || t < now - windowMs) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    }
    if (d) root.append(svg('path', { d, fill: 'none', stroke: s.color, 'stroke-width': 1.8, 'stroke-linejoin': 'round' }));
  }
  container.replaceChildren(root);
}

function formatTick(v) {
  if (v === 0) return '0';
  if (v >= 10000) return `${(v / 1000).toFixed(0)}k`;
  if (v >= 10) return v.toFixed(0);
  if (v >= 1) return v.toFixed(1);
  return v.toPrecision(2);
}

/** A fixed palette with good contrast on the dark background. */
export const PALETTE = ['#5eb0ef', '#f2b84b', '#4cc38a', '#c792ea', '#ff7a7a', '#7fdbca', '#f78c6c', '#82aaff', '#c3e88d', '#ffcb6b'];
