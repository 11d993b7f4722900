// The long tasks (over 50 ms) of the page's main thread in a Chromium trace written by
// `TRACE=FILE npm run perf`: for each, its wall time, the CPU time the thread got during it,
// what it ran (the largest events inside, by CPU time), and the CPU time the page's worker
// and the other renderer threads got meanwhile. A task whose CPU time is a small part of its
// wall time was waiting for a core, not doing page work.
//
// Run: node long-tasks.js FILE

import fs from 'node:fs';

const file = process.argv[2];
if (!file) {
  console.error('usage: node long-tasks.js TRACE_FILE');
  process.exit(2);
}
const parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
const events = Array.isArray(parsed) ? parsed : parsed.traceEvents;

const names = new Map();
for (const e of events) {
  if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args.name);
}
const thread = (e) => names.get(`${e.pid}:${e.tid}`) ?? `thread ${e.tid}`;
const complete = events.filter((e) => e.ph === 'X' && typeof e.dur === 'number');
const main = complete.filter((e) => thread(e) === 'CrRendererMain');
const tasks = main.filter((e) => e.name === 'RunTask' && e.dur > 50_000);
const ms = (us) => (us / 1000).toFixed(1);

console.log(`${tasks.length} long task(s) on the main thread\n`);
console.log('| start (ms) | wall | thread CPU | CPU / wall | largest inside (CPU ms) | other renderer threads meanwhile (CPU ms) |');
console.log('|---|---|---|---|---|---|');
const t0 = Math.min(...main.map((e) => e.ts));
for (const task of tasks) {
  const end = task.ts + task.dur;
  const inside = main.filter((e) => e !== task && e.ts >= task.ts && e.ts + e.dur <= end && e.tdur !== undefined);
  const byName = new Map();
  for (const e of inside) byName.set(e.name, Math.max(byName.get(e.name) ?? 0, e.tdur));
  const largest = [...byName].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([n, t]) => `${n} ${ms(t)}`).join(', ');
  // Top-level tasks of the page's other threads (its worker, compositor) in the window.
  const others = new Map();
  for (const e of complete) {
    const name = thread(e);
    if (e.pid !== task.pid || name === 'CrRendererMain' || e.name !== 'ThreadControllerImpl::RunTask' && e.name !== 'RunTask') continue;
    if (e.ts + e.dur < task.ts || e.ts > end || e.tdur === undefined) continue;
    others.set(name, (others.get(name) ?? 0) + e.tdur);
  }
  const meanwhile = [...others].map(([n, t]) => `${n} ${ms(t)}`).join(', ') || '–';
  const cpu = task.tdur ?? NaN;
  console.log(`| ${ms(task.ts - t0)} | ${ms(task.dur)} | ${ms(cpu)} | ${(cpu / task.dur).toFixed(2)} | ${largest || '–'} | ${meanwhile} |`);
}
