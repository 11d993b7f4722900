// The stats view: polls `stats` once a second and keeps the last minute of samples for the
// tick-time and per-system charts; the table bars come from the schema's archetype tables.

import { $, h, formatCount } from './dom.js';
import { lineChart, PALETTE } from './charts.js';
import { tableName } from './schema.js';

const WINDOW_MS = 60000;
const MAX_BARS = 40;

export class StatsView {
  constructor(app) {
    this.app = app;
    this.samples = []; // {t, p50, p99, last, systems: Map(name -> ms)}
    this.lastTick = null;
    new ResizeObserver(() => this.render()).observe($('stats-chart'));
  }

  /** One `stats` answer. Samples are kept only when the world ticked (or on the first one). */
  add(stats) {
    const t = performance.now();
    const ms = stats.tick_ms || {};
    this.samples.push({
      t,
      p50: ms.p50 ?? null,
      p99: ms.p99 ?? null,
      systems: new Map((stats.systems || []).map((s) => [s.name, s.ms])),
    });
    while (this.samples.length && this.samples[0].t < t - WINDOW_MS - 2000) this.samples.shift();
    this.lastTick = stats.tick;
    if (!$('panel-stats').hidden) this.render();
  }

  render() {
    const now = performance.now();
    lineChart($('stats-chart'), [
      { name: 'p50', color: '#5eb0ef', points: this.samples.map((s) => [s.t, s.p50]) },
      { name: 'p99', color: '#f2b84b', points: this.samples.map((s) => [s.t, s.p99]) },
    ], { now, windowMs: WINDOW_MS, label: 'Tick time p50 and p99 over the last minute', empty: 'no ticks yet' });

    const names = [...new Set(this.samples.flatMap((s) => [...s.systems.keys()]))];
    const series = names.map((name, i) => ({
      name,
      color: PALETTE[i % PALETTE.length],
      points: this.samples.map((s) => [s.t, s.systems.has(name) ? s.systems.get(name) : null]),
    }));
    lineChart($('systems-chart'), series, {
      now,
      windowMs: WINDOW_MS,
      label: 'Per-system time over the last minute',
      empty: names.length ? 'no ticks yet' : 'no systems reported',
    });
    $('system-legend').replaceChildren(...(names.length
      ? series.map((s) => h('span', {}, h('i', { class: 'sw', style: `background:${s.color}` }), s.name))
      : [h('span', { class: 'muted' }, 'no systems')]));

    const tables = (this.app.schema?.tables || []).filter((t) => t.rows > 0).sort((a, b) => (b.rows ?? 0) - (a.rows ?? 0)).slice(0, MAX_BARS);
    const max = Math.max(1, ...tables.map((t) => t.rows ?? 0));
    $('tables-chart').replaceChildren(...tables.flatMap((t) => [
      h('span', { class: 'bname', title: tableName(t) }, tableName(t)),
      h('span', { class: 'bar', style: `width:${((100 * (t.rows ?? 0)) / max).toFixed(2)}%`, role: 'img', 'aria-label': `${formatCount(t.rows)} rows` }),
      h('span', { class: 'bval' }, formatCount(t.rows)),
    ]));
  }
}
