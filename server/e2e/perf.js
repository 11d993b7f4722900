// How a 10,000-row watch updating at 10 Hz affects typing, measured in headless Chromium.
// Run: `npm run perf` (after `cargo build --release -p ecsdb-cli`; ECSDB_BIN picks the binary).
//
// The page is served by a real `ecsdb serve`. Second row: the watch's notifications are made in
// the page (10,000 upserted rows each, as JSON text) and handed to the connection's worker,
// which parses and applies them as it does the socket's, so the load is exactly 10 Hz whatever
// the machine; the main thread only gets frames of the rows in sight. Third row: a real subscription on a demo world (served
// without ticking, or at LIVE_HZ ticks a second with its systems running), whose
// watched rows another client moves ten times a second (TRACE=FILE records a Chromium trace of
// its typing: see long-tasks.js). While they arrive, Playwright types 120 characters into the
// query editor; for each key the time from the key event to the next painted frame is taken.
// The same typing with no watch running is the baseline. Prints a markdown table.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, makeWorld, startServer, launchBrowser, openInspector } from './harness.js';

const ROWS = 10000;
const HZ = 10;
const TYPED = 'SELECT entity, Name.value, Health.hp FROM Health WHERE Health.hp < 100 ORDER BY Health.hp DESC LIMIT 10 -- typing';
const KEYS = TYPED.length;
/** Entities of the demo world for the live row (0 skips it); its watch has about 2% of them. */
const LIVE_ENTITIES = process.env.LIVE_ENTITIES ?? '500000';
const LIVE_QUERY = 'SELECT entity, Name.value, Position.x, Position.y, Health.hp FROM Player, Position';
const LIVE_WRITE = 'UPDATE Position SET x = Position.x + 1 FROM Player, Position';
/** Ticks per second of the live row's server. */
const LIVE_HZ = process.env.LIVE_HZ ?? '0';
/**
 * A file for a Chromium trace of the live row's typing (unset: no trace). `node
 * long-tasks.js FILE` then tells each long task's wall time from the CPU time its thread got.
 */
const TRACE = process.env.TRACE;
const TRACE_CATEGORIES = ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8', 'blink'];

async function measure(page, withLoad) {
  await page.getByRole('tab', { name: 'Watch' }).click();
  await page.evaluate(({ rows, hz, withLoad }) => {
    const { watch, conn } = window.inspector;
    const messages = [];
    for (let m = 0; m < 10; m++) {
      const upserted = [];
      for (let i = 0; i < rows; i++) upserted.push([`${i}v0`, `name${i}`, (i * 7 + m) % 1000, [i % 100, m, 0]]);
      messages.push(JSON.stringify({ jsonrpc: '2.0', method: 'changed', params: { id: 'perf', tick: m, upserted, removed: [] } }));
    }
    const result = { tick: 0, columns: ['entity', 'Name.value', 'Health.hp', 'Position'], rows: JSON.parse(messages[0]).params.upserted };
    window.perf = { latencies: [], longTasks: [], mainThread: 0, frames: 0 };
    new PerformanceObserver((list) => list.getEntries().forEach((e) => window.perf.longTasks.push(e.duration)))
      .observe({ type: 'longtask', buffered: false });
    // The notification texts go to the connection's worker, which parses and applies them at
    // hz as it does the socket's; this thread receives and draws frames, timed here.
    watch.attach('perf');
    conn.simulate('perf', (frame) => {
      const t0 = performance.now();
      watch.receive(frame);
      window.perf.mainThread += performance.now() - t0;
      window.perf.work = frame.work;
    }, { result, messages: withLoad ? messages : [], hz: withLoad ? hz : 0 });
    window.perf.stop = () => conn.simulate('perf', null, {});
    const render = watch.render.bind(watch);
    watch.render = () => {
      const t0 = performance.now();
      render();
      window.perf.mainThread += performance.now() - t0;
      window.perf.frames += 1;
    };
    window.perf.restore = () => (watch.render = render);
    const input = document.getElementById('watch-input');
    input.addEventListener('keydown', (e) => {
      const t = e.timeStamp;
      requestAnimationFrame(() => requestAnimationFrame((now) => window.perf.latencies.push(now - t)));
    });
  }, { rows: ROWS, hz: HZ, withLoad });
  // Type with the watch in sight (its rows being redrawn).
  await page.focus('#watch-input');
  await page.keyboard.type(TYPED, { delay: 25 });
  await page.waitForTimeout(300);
  const result = await page.evaluate(() => {
    window.perf.stop();
    window.perf.restore();
    const { stop, restore, ...rest } = window.perf;
    return { ...rest, applied: window.inspector.watch.updates };
  });
  await page.fill('#watch-input', '');
  const applied = withLoad ? result.applied : 0;
  return {
    ...summarize(result),
    applied,
    perMessage: (result.work || 0) / Math.max(1, applied),
    perFrame: result.mainThread / Math.max(1, result.frames),
  };
}

function summarize(result) {
  const sorted = [...result.latencies].sort((a, b) => a - b);
  const q = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { p50: q(0.5), p99: q(0.99), max: sorted[sorted.length - 1], keys: sorted.length, longTasks: result.longTasks.length, longest: Math.max(0, ...result.longTasks) };
}

/**
 * The same typing while a real subscription on a demo world streams `changed` notifications:
 * another client moves every watched row HZ times a second (one `exec` each).
 */
async function measureLive(browser) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecsdb-perf-'));
  const world = path.join(dir, 'demo.ecsdb');
  execFileSync(BIN, ['demo', '--entities', LIVE_ENTITIES, '--ticks', '1', '--out', world], { stdio: 'ignore' });
  // LIVE_HZ=60 serves it as a game runs: ticking, the demo's systems moving every entity and
  // respawning some each tick. The default (0) applies each write at once, with no systems.
  const server = await startServer(world, { allowWrites: true, extra: ['--hz', LIVE_HZ] });
  let writer = null;
  try {
    const { page } = await openInspector(browser, server.url);
    await page.getByRole('tab', { name: 'Watch' }).click();
    await page.fill('#watch-input', LIVE_QUERY);
    await page.press('#watch-input', 'Enter');
    await page.locator('[data-testid="watch-table"] tbody tr').first().waitFor({ timeout: 60000 });
    const rows = await page.evaluate(() => window.inspector.watch.rowCount);
    // Another client moves every watched row HZ times a second.
    writer = setInterval(() => {
      server.rpc('exec', { text: LIVE_WRITE }).catch(() => {});
    }, 1000 / HZ);
    await page.waitForTimeout(1000);
    // The trace covers the whole measured window, the long task observer's included.
    if (TRACE) await browser.startTracing(page, { path: TRACE, categories: TRACE_CATEGORIES });
    await page.evaluate(() => {
      window.perf = { latencies: [], longTasks: [], updatesBefore: window.inspector.watch.updates, started: performance.now() };
      new PerformanceObserver((list) => list.getEntries().forEach((e) => window.perf.longTasks.push(e.duration)))
        .observe({ type: 'longtask', buffered: false });
      document.getElementById('watch-input').addEventListener('keydown', (e) => {
        const t = e.timeStamp;
        requestAnimationFrame(() => requestAnimationFrame((now) => window.perf.latencies.push(now - t)));
      });
    });
    await page.focus('#watch-input');
    await page.keyboard.press('End');
    await page.keyboard.type(TYPED, { delay: 25 });
    await page.waitForTimeout(300);
    const result = await page.evaluate(() => ({ ...window.perf, updates: window.inspector.watch.updates - window.perf.updatesBefore, seconds: (performance.now() - window.perf.started) / 1000 }));
    // (Stopped after the long tasks are read: writing the trace out takes the CPU a while.)
    if (TRACE) await browser.stopTracing();
    return { ...summarize(result), rows, applied: result.updates, rate: result.updates / result.seconds };
  } finally {
    clearInterval(writer);
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const world = makeWorld();
const server = await startServer(world.world);
const browser = await launchBrowser();
try {
  const { page } = await openInspector(browser, server.url);
  const idle = await measure(page, false);
  const loaded = await measure(page, true);
  const live = LIVE_ENTITIES !== '0' ? await measureLive(browser) : null;
  const f = (x) => x.toFixed(1);
  console.log(`${ROWS.toLocaleString('en-US')}-row watch at ${HZ} Hz while typing ${KEYS} keys; key event to painted frame (ms); ${os.cpus().length} cores, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}\n`);
  console.log('| case | p50 | p99 | max | long tasks (>50 ms) | longest task | notifications applied | worker ms per notification (parse + apply) | main-thread ms per frame (receive + draw) |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  const cases = [['no watch (baseline)', idle], ['10,000-row watch, 10 Hz (made in the page)', loaded]];
  if (live) cases.push([`live watch: ${live.rows.toLocaleString('en-US')} rows of a ${Number(LIVE_ENTITIES).toLocaleString('en-US')}-entity world, another client's exec at ${HZ} Hz, server ${LIVE_HZ === '0' ? 'not ticking' : `ticking at ${LIVE_HZ} Hz`} (${live.rate.toFixed(1)} notifications/s)`, live]);
  for (const [name, r] of cases) {
    const perMessage = r.applied && r.perMessage !== undefined ? f(r.perMessage) : '–';
    const perRender = r.applied && r.perFrame !== undefined ? f(r.perFrame) : '–';
    console.log(`| ${name} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.max)} | ${r.longTasks} | ${f(r.longest)} | ${r.applied} | ${perMessage} | ${perRender} |`);
  }
  if (live) console.log(`\nlive p50 ratio to baseline: ${(live.p50 / idle.p50).toFixed(2)}x; p99 ratio: ${(live.p99 / idle.p99).toFixed(2)}x`);
  console.log(`\np50 ratio loaded/baseline: ${(loaded.p50 / idle.p50).toFixed(2)}x; p99 ratio: ${(loaded.p99 / idle.p99).toFixed(2)}x`);
} finally {
  await browser.close();
  await server.stop();
  world.cleanup();
}
